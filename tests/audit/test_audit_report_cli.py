"""`pokna audit report` on a real bundle: games played over HTTP, the bundle as GET /v1/audit/bundle streams
it, the report made in the pass that verifies it. Its figures agree with the exact odds within its
intervals and with the bundle's own records; an INVALID bundle gets no report."""

from __future__ import annotations

import json
import re
import resource
import signal
import subprocess
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker
from typer.testing import CliRunner

import pokna.cli.ledger  # noqa: F401  (registers `audit`)
from pokna.cli.app import app
from pokna.cli.audit_report import summary_lines
from pokna.runtime import Runtime
from pokna_verify.bundle.report import Verdict
from pokna_verify.game import GameConfig
from pokna_verify.game.odds import LonePolicy, Policy, VotePolicy, table_odds
from support.audit_bundles import records
from support.game_play import Api, new_tenant_key, obliging, play
from support.steering import steer

runner = CliRunner()
GAMES = 36
STAKE, RAISE, RAKE_BPS, RAKE_CAP = 5, 3, 1_000, 2


@pytest.fixture
def played(
    client: TestClient, sessions: sessionmaker[Session], runtime: Runtime, tmp_path: Path
) -> tuple[Path, Path]:
    """GAMES games of the Vigo and two players (start, roll, split, claim: one policy), and the bundle.

    The first game's dice are chosen so that both players stay in favor and vote: the report names the one
    policy the games were played by only if each decision came up, and with random dice no vote came up
    in 36 games in (3/4)^36 = 3e-5 of runs (a lone survivor's claim never coming up is 2^-36)."""
    api = Api(client, new_tenant_key(sessions))
    wallets = [api.wallet(10_000) for _ in range(3)]
    for index in range(GAMES):
        seats = wallets[index % 3 :] + wallets[: index % 3]
        game = api.create_game(
            seats[0], seats[1:], stake=STAKE, challenge_raise=RAISE, rake={"bps": RAKE_BPS, "cap": RAKE_CAP}
        )
        if index == 0:
            game = steer(api, sessions, runtime, game, ["red", "red", "red"])  # the favor, then both in it
        play([api], game, obliging)
    bundle, keys = tmp_path / "bundle.jsonl", tmp_path / "keys.json"
    response = api.get("/v1/audit/bundle")
    assert response.status_code == 200, response.text
    bundle.write_text(response.text)
    keys.write_text(json.dumps(api.key_ring().to_json()))
    return bundle, keys


def report(bundle: Path, keys: Path, out: Path, *extra: str) -> Any:
    return runner.invoke(
        app,
        [
            "audit",
            "report",
            str(bundle),
            "--keys",
            str(keys),
            "--html",
            str(out / "r.html"),
            "--json",
            str(out / "r.json"),
            *extra,
        ],
    )


def test_a_report_of_games_played_over_http(played: tuple[Path, Path], tmp_path: Path) -> None:
    bundle, keys = played
    out = tmp_path / "report"
    out.mkdir()
    answer = report(bundle, keys, out, "--processes", "2")
    assert answer.exit_code == 0, answer.output
    assert f"Report of {GAMES} games" in answer.output
    document = json.loads((out / "r.json").read_text())
    page = (out / "r.html").read_text()
    assert document["bundle"]["verdict"] == "valid"
    assert document["period"]["games"] == GAMES

    # The figures are the bundle's own: every proof's rolls and transfers, added up independently here.
    proofs = [
        record["proof"] for record in records(bundle.read_text().splitlines()) if record["type"] == "game"
    ]
    assert len(proofs) == GAMES
    faces = [0] * 6
    staked = {"vigo": 0, "players": 0}
    returned = {"vigo": 0, "players": 0}
    rake = 0
    for proof in proofs:
        for roll in proof["rolls"]:
            faces[roll["face"] - 1] += 1
        for transfer in proof["transfers"]:
            payer, payee = transfer["payer"], transfer["payee"]
            if isinstance(payer, int):
                staked["vigo" if payer == 0 else "players"] += transfer["amount"]
            if isinstance(payee, int):
                returned["vigo" if payee == 0 else "players"] += transfer["amount"]
            if payee == "revenue":
                rake += transfer["amount"]
    assert next(p for p in document["rng"]["purposes"] if p["purpose"] == "all")["faces"] == faces
    assert document["rng"]["rolls"] == sum(faces) == document["bundle"]["rolls_recomputed"]

    (table,) = document["rtp"]["tables"]
    assert (table["players"], table["stake"], table["challenge_raise"]) == (2, STAKE, RAISE)
    assert (table["rake_bps"], table["rake_cap"], table["games"]) == (RAKE_BPS, RAKE_CAP, GAMES)
    assert table["policies"] == [Policy(LonePolicy.CLAIM, VotePolicy.SPLIT).label]
    assert table["rake"]["taken"] == table["rake"]["by_terms"] == rake
    assert table["rake"]["games_off_terms"] == 0
    odds = table_odds(
        GameConfig(STAKE, RAISE, 2, RAKE_BPS, RAKE_CAP), Policy(LonePolicy.CLAIM, VotePolicy.SPLIT)
    )
    expected = {
        "vigo": odds.seats[0].expected_paid_out / odds.seats[0].expected_paid_in,
        "players": sum(s.expected_paid_out for s in odds.seats[1:])
        / sum(s.expected_paid_in for s in odds.seats[1:]),
        "operator": odds.rake_per_unit_staked,
    }
    for side in table["sides"]:
        name = side["side"]
        if name != "operator":
            assert (side["staked"], side["returned"]) == (staked[name], returned[name])
        assert side["theoretical"] == {
            "low": float(Fraction(expected[name])),
            "high": float(Fraction(expected[name])),
        }
        assert side["test"]["p_value"] is not None, side["test"]["not_run"]
        # The report flags what falls outside the interval, and only that. Whether these 36 random games
        # fall inside is chance: the report is built to flag about one fair report in a hundred
        # (pokna.audit.significance), so asserting "never flagged" failed that often (seen in this
        # round's runs). Fair play unflagged is held with fixed seeds: tests/audit/test_audit_rtp_figures.py.
        inside = side["interval"]["low"] <= side["rtp"] <= side["interval"]["high"]
        assert inside == (not side["test"]["flagged"]), (name, side)
        assert (
            f"{100 * side['rtp']:.2f}%" in page if name != "operator" else f"{100 * side['rtp']:.3f}%" in page
        )
    # The report's flags are its tests' (the sides' RTP, the dice's faces; no rake is off its terms here),
    # and the page's verdict says their count: none in all but about one run in a hundred, by the chance
    # the assertion on each side above allows for.
    flagged = sum(test["flagged"] for test in document["tests"])
    assert document["testing"]["flags"] == flagged
    if flagged:
        assert f"{flagged} figure{'s' if flagged != 1 else ''} flagged: see below." in page
    else:
        assert "No figure is flagged" in page


def test_an_invalid_bundle_gets_no_report(played: tuple[Path, Path], tmp_path: Path) -> None:
    bundle, keys = played
    data = bytearray(bundle.read_bytes())
    # One byte: the first digit of a payout's amount in the ledger (the proof still says what was due).
    payout = re.search(rb'"transaction".*?"payout".*?"amount"\s*:\s*-?(\d)', bytes(data))
    assert payout is not None
    digit = payout.start(1)
    data[digit] = ord("9") if data[digit] != ord("9") else ord("8")
    tampered = tmp_path / "tampered.jsonl"
    tampered.write_bytes(bytes(data))
    answer = report(tampered, keys, tmp_path)
    assert answer.exit_code == 1, answer.output
    assert "no report: the bundle is INVALID" in answer.output
    assert "INVALID:" in answer.output
    assert not (tmp_path / "r.html").exists()
    assert not (tmp_path / "r.json").exists()


def test_the_period_and_its_mistakes(played: tuple[Path, Path], tmp_path: Path) -> None:
    bundle, keys = played
    later = report(bundle, keys, tmp_path, "--from", "2999-01-01T00:00:00")
    assert later.exit_code == 0, later.output
    document = json.loads((tmp_path / "r.json").read_text())
    assert document["period"]["games"] == 0
    assert document["period"]["left_out"]["outside_the_period"] == GAMES
    assert document["period"]["from"] == "2999-01-01T00:00:00Z"

    backwards = report(bundle, keys, tmp_path, "--from", "2030-01-02", "--to", "2030-01-01")
    assert backwards.exit_code == 2
    assert "--to" in backwards.output

    export = tmp_path / "export.jsonl"
    export.write_text(
        "".join(line for line in bundle.read_text().splitlines(keepends=True) if '"transaction"' in line)
    )
    not_a_bundle = report(export, keys, tmp_path)
    assert not_a_bundle.exit_code == 2
    assert "not an audit bundle" in not_a_bundle.output

    # Issue 46, L6: a full disk is no bug in pokna, and no INVALID bundle (exit 1): it is output the command
    # cannot use, named with the OS's reason, like any unusable input (exit 2).
    for option in ("--html", "--json"):
        written = {
            "--html": str(tmp_path / "r.html"),
            "--json": str(tmp_path / "r.json"),
            option: "/dev/full",
        }
        full = runner.invoke(
            app, ["audit", "report", str(bundle), "--keys", str(keys), *sum(written.items(), ())]
        )
        assert full.exit_code == 2, full.output
        assert "error: cannot write /dev/full: No space left on device" in full.output, full.output
        assert "bug" not in full.output


def test_a_report_cut_by_a_full_disk_leaves_no_page_to_pass_for_a_whole_one(
    played: tuple[Path, Path], tmp_path: Path
) -> None:
    """A file-size limit stands in for a disk that fills half-way through the page: the write fails after
    LIMIT bytes. Nothing is left at --html (nor its partial file beside it), as for a cut `ledger export`."""
    bundle, keys = played
    out = tmp_path / "out"
    out.mkdir()
    limit = 4096

    def small_disk() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    pokna = str(Path(sys.executable).with_name("pokna"))
    ran = subprocess.run(
        [pokna, "audit", "report", str(bundle), "--keys", str(keys), "--html", str(out / "r.html")],
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=small_disk,
    )
    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert f"error: cannot write {out / 'r.html'}: File too large" in ran.stderr, ran.stderr
    assert list(out.iterdir()) == []


def test_a_valid_bundles_notes_and_currencies_cannot_drive_the_terminal(
    played: tuple[Path, Path], tmp_path: Path
) -> None:
    """The report of a real bundle, then what the command says of it had a note or a table's currency held
    ESC [8m and a newline with a line of its own: each is printed escaped, as the verifiers print them. (A
    bundle the server signs cannot carry such a currency, and no valid one a flagged rake: a forged bundle
    with its own key ring could, so the document is edited here rather than such a bundle built.)"""
    bundle, keys = played
    assert report(bundle, keys, tmp_path).exit_code == 0
    document = json.loads((tmp_path / "r.json").read_text())
    table = document["rtp"]["tables"][0]
    table["name"] = table["name"].replace("CREDIT", "CR\x1b[8m\nVALID")
    table["rake"].update(flagged=True, games_off_terms=1)
    notes = ["game gam_1\x1b[2J\n  nothing flagged"]
    lines = summary_lines(document, Verdict.VALID, notes, "r.html")
    assert not [line for line in lines if "\x1b" in line or "\n" in line], lines
    assert "  note: game gam_1\\x1b[2J\\n  nothing flagged" in lines
    assert [line for line in lines if line.startswith("  FLAGGED  ") and "CR\\x1b[8m\\nVALID" in line]


@pytest.mark.parametrize("option", ["--html", "--json"])
def test_a_dash_for_a_report_file_is_refused_naming_the_option(
    option: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`-` is stdin for the bundle, but the report's files are files only (stdout has the summary): it was
    written as a file named `-`. Refused before the bundle is read, exit 2, nothing written."""
    monkeypatch.chdir(tmp_path)
    files = {"--html": "r.html", "--json": "r.json", option: "-"}
    refused = runner.invoke(app, ["audit", "report", "bundle.jsonl", *sum(files.items(), ())])
    assert refused.exit_code == 2, refused.output
    assert f"'{option}'" in refused.output, refused.output
    assert "a file named -" in refused.output, refused.output
    assert list(tmp_path.iterdir()) == []
