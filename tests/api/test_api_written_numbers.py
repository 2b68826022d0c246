"""An integer field takes a number that is whole as written, however it is spelled (10, 10.0, 1e1), and
nothing else, whatever a double makes of it: `0.99999999999999999` is the double 1.0, but no integer, so a
deposit of it is refused (422 naming `amount`) rather than booked as 1 (issue 46, L4)."""

from __future__ import annotations

import json
from decimal import Decimal, localcontext
from typing import Annotated, Any

import pytest
from fastapi.routing import APIRoute, iter_route_contexts
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st
from pydantic import Field, TypeAdapter, ValidationError
from sqlalchemy.orm import Session, sessionmaker

from pokna.api.fields import WHOLE_NUMBER
from pokna.api.written_numbers import WrittenNumbersRoute, parse_number
from support.api_checks import assert_names_field, assert_problem, database_state
from support.tenant_api import TenantApi, money_key, new_tenant

WholeField = TypeAdapter(Annotated[int, Field(strict=True), WHOLE_NUMBER])
"""An integer field without bounds, as every integer a request body takes is declared."""

NOT_WHOLE = ["0.99999999999999999", "4.9999999999999999", "10.0000000000000001", "1.00000000000000000001e1"]
WHOLE_TEN = [
    "10",
    "10.0",
    "1e1",
    "10.000000000000000000000",
    "1.0000000000000000000e1",
    "100000000000000000000e-19",
]


def _read(literal: str) -> int | None:
    """The integer a request body's field takes from this literal, or None if it refuses it."""
    try:
        return WholeField.validate_python(json.loads(f'{{"n": {literal}}}', parse_float=parse_number)["n"])
    except ValidationError:
        return None


whole_numbers = st.integers(min_value=-(2**60), max_value=2**60)


@st.composite
def near_whole_literals(draw: st.DrawFn) -> str:
    """A number a hair from a whole one, on either side, closer than a double can tell apart."""
    whole = draw(whole_numbers)
    digits = draw(st.integers(min_value=17, max_value=40))
    with localcontext(prec=100):  # exact: the default 28 digits would round the hair away
        offset = draw(st.integers(min_value=1, max_value=9)) * Decimal(10) ** -digits
        near = Decimal(whole) + offset * draw(st.sampled_from([1, -1]))
    if draw(st.booleans()):
        return f"{near:f}"
    return f"{near:E}"


@st.composite
def whole_spellings(draw: st.DrawFn) -> tuple[int, str]:
    """A whole number, written with a fraction of zeros, an exponent, or both."""
    whole = draw(st.integers(min_value=-(2**53), max_value=2**53))
    zeros = draw(st.integers(min_value=0, max_value=30))
    spelling = draw(
        st.sampled_from(
            [
                f"{whole}.{'0' * max(zeros, 1)}",
                f"{whole}{'0' * zeros}e-{zeros}",
                f"{Decimal(whole):E}",
                f"{whole}E+0",
            ]
        )
    )
    return whole, spelling


@given(near_whole_literals())
def test_a_number_that_is_not_whole_as_written_is_refused_whatever_its_double(literal: str) -> None:
    assert Decimal(literal) != Decimal(literal).to_integral_value()
    assert _read(literal) is None


@given(whole_spellings())
def test_a_whole_number_is_taken_as_written_however_it_is_spelled(case: tuple[int, str]) -> None:
    whole, spelling = case
    assert _read(spelling) == whole


@pytest.mark.parametrize("literal", ["10.5", "0.1", "1e-1", "1e400", "-1e400", "1e-400"])
def test_a_fraction_or_a_number_no_double_holds_is_refused(literal: str) -> None:
    assert _read(literal) is None


def test_the_parsed_number_is_still_a_float_where_any_number_will_do() -> None:
    """Free-form JSON (a posting's `metadata`) keeps its numbers as the doubles they always were."""
    for literal in ["0.99999999999999999", "10.0", "0.5"]:
        parsed = json.loads(literal, parse_float=parse_number)
        assert isinstance(parsed, float)
        assert parsed == float(literal)
        assert json.dumps(parsed) == json.dumps(float(literal))


def test_every_route_that_reads_a_body_reads_its_numbers_as_written(client: TestClient) -> None:
    """A route of FastAPI's own class would read `0.99999999999999999` as 1.0 and take it as 1."""
    routes = [context.original_route for context in iter_route_contexts(client.app.routes)]  # type: ignore[attr-defined]
    with_body = [route for route in routes if isinstance(route, APIRoute) and route.body_field is not None]
    assert "/v1/accounts/{account_id}/deposits" in {route.path for route in with_body}
    assert [route.path for route in with_body if not isinstance(route, WrittenNumbersRoute)] == []


@pytest.fixture
def api(client: TestClient, sessions: sessionmaker[Session]) -> TenantApi:
    return new_tenant(client, sessions)


def _deposit(api: TenantApi, wallet: str, literal: str) -> Any:
    return api.post(
        f"/v1/accounts/{wallet}/deposits",
        content=b'{"amount": ' + literal.encode() + b"}",
        headers={"content-type": "application/json", **money_key()},
    )


@pytest.mark.parametrize("literal", NOT_WHOLE)
def test_a_deposit_of_a_number_a_double_rounds_to_whole_is_refused_and_books_nothing(
    api: TenantApi, sessions: sessionmaker[Session], literal: str
) -> None:
    wallet = api.wallet(100)
    before = database_state(sessions)
    assert_names_field(assert_problem(_deposit(api, wallet, literal), 422, "validation_error"), "body.amount")
    assert database_state(sessions) == before
    assert api.balance(wallet) == 100


@pytest.mark.parametrize("literal", WHOLE_TEN)
def test_a_deposit_of_ten_written_any_whole_way_books_ten(api: TenantApi, literal: str) -> None:
    wallet = api.wallet(100)
    answer = _deposit(api, wallet, literal)
    assert answer.status_code == 201, answer.text
    assert api.balance(wallet) == 110


def test_a_nested_integer_is_read_as_written_too(api: TenantApi, sessions: sessionmaker[Session]) -> None:
    vigo, players = api.wallet(100), [api.wallet(100), api.wallet(100)]
    good = {"vigo_account_id": vigo, "player_account_ids": players, "stake": 5}
    before = database_state(sessions)
    for field, value in [("stake", "4.9999999999999999"), ("rake", '{"bps": 499.99999999999999999}')]:
        body = json.dumps({key: item for key, item in good.items() if key != field})
        body = body[:-1] + f', "{field}": {value}}}'
        answer = api.post("/v1/games", content=body.encode(), headers={"content-type": "application/json"})
        name = "body.stake" if field == "stake" else "body.rake.bps"
        assert_names_field(assert_problem(answer, 422, "validation_error"), name)
    assert database_state(sessions) == before
