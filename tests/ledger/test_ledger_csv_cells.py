"""A deposit's reference is the client's own text, and the CSV export is opened in spreadsheets: no reference
may split a row or be read as a formula there."""

from __future__ import annotations

import csv
import io

import pytest
from sqlalchemy.orm import Session, sessionmaker

from support.driver import export_csv
from support.sessions import unit_of_work
from support.tenant_api import TenantApi

pytest_plugins = ["ledger_fixtures"]
pytestmark = pytest.mark.usefixtures("on_chain_zero")


def _references(sessions: sessionmaker[Session], tenant_api: TenantApi, references: list[str]) -> list[str]:
    """The reference cell of each deposit's wallet row, as Python's csv module reads the export."""
    wallet = tenant_api.wallet()
    for reference in references:
        assert tenant_api.deposit(wallet, 10, reference=reference).status_code == 201
    with unit_of_work(sessions) as session:
        text = "".join(export_csv(session, tenant_api.tenant_id))
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    return [row["reference"] for row in rows if row["account_id"] == wallet]


def test_a_carriage_return_in_a_reference_stays_inside_its_cell(
    sessions: sessionmaker[Session], tenant_api: TenantApi
) -> None:
    references = ["psp\r7781", "line\nbreak", "crlf\r\nend"]
    assert _references(sessions, tenant_api, references) == references


def test_a_reference_a_spreadsheet_would_read_as_a_formula_is_written_as_text(
    sessions: sessionmaker[Session], tenant_api: TenantApi
) -> None:
    formulas = ['=HYPERLINK("http://x.test","pay")', "+1+1", "-2+3", "@SUM(A1)", "\t=1", "\r=1"]
    plain = ["psp-charge-7781", "wire '7'", "a=b"]
    cells = _references(sessions, tenant_api, formulas + plain)
    # OWASP's advice for CSV injection: a leading apostrophe, which spreadsheets take as "this is text".
    assert cells == [f"'{formula}" for formula in formulas] + plain
