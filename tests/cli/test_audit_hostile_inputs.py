"""What an outside probe fed `pokna-verify audit`, `pokna audit verify` and `pokna audit report` (issue 46): a
line of an export or of an audit bundle nested 100,000 deep, a number of 5,000 digits, a posting naming its
`amount` twice. Each is unusable input: exit 2 and one line naming the file, the line and the limit
(pokna_verify.bounded_input), whether the line is read here or by a worker process; never a traceback or a
verdict. Endless files, FIFOs and stdin: tests/fairness/test_fairness_hostile_inputs.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker
from test_audit_verify import _export_lines
from typer.testing import CliRunner

import pokna.cli.audit_report  # noqa: F401  (registers `audit report`)
from pokna.cli.app import app
from pokna.public_log.sequencer import LogSigner
from pokna.runtime import Runtime
from pokna_verify.bundle import scan as bundle_scan
from pokna_verify.ledger import scan as audit_scan
from support.audit_bundles import play_books
from support.game_logs import ORIGIN_PREFIX, sequence_all
from support.hostile_inputs import DEEP_ARRAY, HUGE_NUMBER
from support.verify_cli import Ran, VerifyCli

TOO_DEEP = "JSON nested deeper than 64 levels, the most the verifiers read"
TOO_LONG = "a number of 5,000 digits, more than the 100 the verifiers read"


def one_line(ran: Ran) -> str:
    lines = [line for line in ran.output.splitlines() if line.strip()]
    assert len(lines) == 1, ran.output[-3000:]
    return lines[0]


def test_an_export_line_nested_100000_deep_is_unusable_naming_the_file_and_the_line(
    verify_cli: VerifyCli, tmp_path: Path
) -> None:
    lines = _export_lines(40)
    lines[4] = DEEP_ARRAY + "\n"
    export = tmp_path / "ledger.jsonl"
    export.write_text("".join(lines))
    ran = verify_cli("audit", "verify", str(export))
    assert ran.exit_code == 2, ran.output[-3000:]
    assert one_line(ran) == f"UNUSABLE INPUT: {export}: line 5: {TOO_DEEP}"

    ran = verify_cli("audit", "verify", "-", "--json", input="".join(lines).encode())
    assert ran.exit_code == 2, ran.output[-3000:]
    assert json.loads(ran.stdout) == {"valid": None, "error": f"stdin: line 5: {TOO_DEEP}"}

    lines[0], lines[4] = DEEP_ARRAY + "\n", lines[0]
    export.write_text("".join(lines))
    ran = verify_cli("audit", "verify", str(export))
    assert ran.exit_code == 2, ran.output[-3000:]
    assert one_line(ran) == f"UNUSABLE INPUT: {export}: line 1: {TOO_DEEP}"


def test_a_large_export_read_by_worker_processes_names_the_line_past_the_limit(
    verify_cli: VerifyCli, tmp_path: Path
) -> None:
    lines = _export_lines(12_000)  # ~5 MiB: read by the process pool
    lines[9_876] = lines[9_876].replace('"seq": 9877', f'"seq": {HUGE_NUMBER}', 1)
    assert HUGE_NUMBER in lines[9_876]
    export = tmp_path / "ledger.jsonl"
    export.write_text("".join(lines))
    assert export.stat().st_size > audit_scan._POOL_AFTER_BLOCKS * audit_scan._BLOCK_BYTES
    ran = verify_cli("audit", "verify", str(export), "--processes", "2")
    assert ran.exit_code == 2, ran.output[-3000:]
    assert one_line(ran) == f"UNUSABLE INPUT: {export}: line 9877: {TOO_LONG}"


@pytest.mark.parametrize(
    "case", ["a posting's amount twice", "a line nested 100,000 deep", "a number of 5,000 digits"]
)
def test_a_bundle_line_past_a_limit_or_naming_a_key_twice_is_unusable_in_every_audit_command(
    verify_cli: VerifyCli,
    client: TestClient,
    sessions: sessionmaker[Session],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    case: str,
) -> None:
    books = play_books(client, sessions, games=3)
    lines = books.bundle()
    bundle, keys = tmp_path / "bundle.jsonl", tmp_path / "keys.json"
    keys.write_text(json.dumps(books.key_ring.to_json()))
    bundle.write_text("".join(lines))
    assert verify_cli("audit", "verify", str(bundle), "--keys", str(keys)).exit_code == 0

    # A posting whose forged amount comes first and genuine amount last: json.loads keeps the last, so the
    # line's hash still checks out, while a reader that keeps the first sees 999999.
    index = next(
        number for number, line in enumerate(lines) if '"type":"transaction"' in line.replace(" ", "")
    )
    genuine = lines[index]
    forged = re.sub(r'"amount"\s*:', '"amount": 999999, "amount":', genuine, count=1)
    assert forged != genuine
    assert json.loads(forged) == json.loads(genuine)
    line, reason = {
        "a posting's amount twice": (
            forged,
            'the key "amount" appears more than once in one object (at /postings/0/amount): duplicate keys are '
            "refused, since readers differ on which one counts",
        ),
        "a line nested 100,000 deep": (DEEP_ARRAY + "\n", TOO_DEEP),
        "a number of 5,000 digits": (genuine.replace("{", '{"size": ' + HUGE_NUMBER + ", ", 1), TOO_LONG),
    }[case]
    bundle.write_text("".join([*lines[:index], line, *lines[index + 1 :]]))
    said = f"UNUSABLE INPUT: {bundle}: line {index + 1}: {reason}"
    ran = verify_cli("audit", "verify", str(bundle), "--keys", str(keys))
    assert ran.exit_code == 2, ran.output[-3000:]
    assert one_line(ran) == said
    # Blocks of a few lines and a pool from the first: the line is read by a worker process, which raises.
    monkeypatch.setattr(bundle_scan, "_BLOCK_BYTES", 1500)
    monkeypatch.setattr(bundle_scan, "_POOL_AFTER_BLOCKS", 1)
    ran = verify_cli("audit", "verify", str(bundle), "--keys", str(keys), "--processes", "3")
    assert ran.exit_code == 2, ran.output[-3000:]
    assert one_line(ran) == said
    html = tmp_path / "report.html"
    report = CliRunner().invoke(
        app, ["audit", "report", str(bundle), "--keys", str(keys), "--html", str(html)]
    )
    assert report.exit_code == 2, report.output[-3000:]
    assert report.output.strip() == said
    assert not html.exists()


def test_a_log_leaf_whose_entry_nests_100000_deep_is_unusable_naming_its_line(
    verify_cli: VerifyCli,
    client: TestClient,
    sessions: sessionmaker[Session],
    runtime: Runtime,
    tmp_path: Path,
) -> None:
    """A leaf's entry is JSON inside a string: the line's own limits do not see into it, and the entry was
    read with json.loads, which raised RecursionError (a fuzzing round's find). It is read within them."""
    books = play_books(client, sessions, games=2)
    assert sequence_all(runtime.aio, LogSigner(ORIGIN_PREFIX, runtime.keys.signing_key)) >= 2
    lines = books.bundle()
    bundle, keys = tmp_path / "bundle.jsonl", tmp_path / "keys.json"
    keys.write_text(json.dumps(books.key_ring.to_json()))
    index = next(number for number, line in enumerate(lines) if json.loads(line)["type"] == "pokna.log.leaf")
    lines[index] = json.dumps({**json.loads(lines[index]), "entry": DEEP_ARRAY}) + "\n"
    bundle.write_text("".join(lines))
    ran = verify_cli("audit", "verify", str(bundle), "--keys", str(keys))
    assert ran.exit_code == 2, ran.output[-3000:]
    assert one_line(ran) == f"UNUSABLE INPUT: {bundle}: line {index + 1}: {TOO_DEEP}"
