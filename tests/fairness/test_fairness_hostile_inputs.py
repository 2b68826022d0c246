"""What an outside probe fed `pokna-verify proof` and `pokna verify` (issue 46): JSON nested 100,000 deep as
the proof (a file or a URL), `--keys`, `--receipt` and `--beacon-chain`; a number of 5,000 digits; a key named
twice; /dev/zero and an endless FIFO; a server that trickles its answer. Each is unusable input: exit 2 and
one line naming the input and the limit (pokna_verify.bounded_input), never a traceback or a verdict.

The in-process runs go through both command lines (the `verify_cli` fixture); the endless inputs run each
command as its own process with 1 GiB of address space (support.hostile_inputs.run_bounded), so a verifier
that reads them whole fails fast instead of eating the machine. Audit exports and bundles:
tests/cli/test_audit_hostile_inputs.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fairness_samples import KEY_RING, NEW_KEY, STRANGER_KEY, sample_proof, sample_receipt

from pokna_verify.tlog.game_leaf import game_leaf_entry
from support.hostile_inputs import (
    COMMANDS,
    DEEP_ARRAY,
    HUGE_NUMBER,
    POKNA,
    endless_fifo,
    hostile_server,
    run_bounded,
)
from support.log_stand_in import History, StandInLog
from support.verify_cli import Ran, VerifyCli

TOO_DEEP = "JSON nested deeper than 64 levels, the most the verifiers read"
TOO_LARGE = "larger than 16 MiB (16,777,216 bytes)"
LOGGED_AS = (
    "game #1 of standin.test/games/tnt_standin's public log, proven in its signed checkpoint of 1 games"
)


@pytest.fixture
def evidence(tmp_path: Path) -> dict[str, Path]:
    """A proof that verifies (exit 0) with its keys and receipt, and a file nested 100,000 deep."""
    files = {
        "proof": (tmp_path / "proof.json", json.dumps(sample_proof())),
        "keys": (tmp_path / "keys.json", json.dumps(KEY_RING.to_json())),
        "receipt": (tmp_path / "receipt.json", json.dumps(sample_receipt())),
        "deep": (tmp_path / "deep.json", DEEP_ARRAY),
    }
    for path, text in files.values():
        path.write_text(text)
    return {name: path for name, (path, _) in files.items()}


def one_line(ran: Ran) -> str:
    """What the command said: one line, no traceback."""
    lines = [line for line in ran.output.splitlines() if line.strip()]
    assert len(lines) == 1, ran.output[-3000:]
    return lines[0]


def test_the_sample_proof_verifies(verify_cli: VerifyCli, evidence: dict[str, Path]) -> None:
    ran = verify_cli(
        "verify",
        str(evidence["proof"]),
        "--keys",
        str(evidence["keys"]),
        "--receipt",
        str(evidence["receipt"]),
    )
    assert ran.exit_code == 0, ran.output


def test_a_proof_nested_100000_deep_is_unusable_naming_the_file_and_the_limit(
    verify_cli: VerifyCli, evidence: dict[str, Path]
) -> None:
    ran = verify_cli("verify", str(evidence["deep"]))
    assert ran.exit_code == 2, ran.output[-3000:]
    said = one_line(ran)
    assert said == f"UNUSABLE INPUT: the proof file {evidence['deep']}: {TOO_DEEP}"


@pytest.mark.parametrize(
    ("option", "what"), [("--keys", "key ring"), ("--receipt", "receipt"), ("--beacon-chain", "beacon chain")]
)
def test_each_option_naming_a_file_is_read_within_the_limits(
    verify_cli: VerifyCli, evidence: dict[str, Path], option: str, what: str
) -> None:
    ran = verify_cli("verify", str(evidence["proof"]), option, str(evidence["deep"]))
    assert ran.exit_code == 2, ran.output[-3000:]
    said = one_line(ran)
    assert said == f"UNUSABLE INPUT: the {what} file {evidence['deep']}: {TOO_DEEP}"


def test_a_proof_url_and_a_key_ring_url_nested_100000_deep(
    verify_cli: VerifyCli, evidence: dict[str, Path]
) -> None:
    with hostile_server({"/proof": DEEP_ARRAY.encode(), "/keys": DEEP_ARRAY.encode()}) as server:
        ran = verify_cli("verify", server.url("/proof"))
        assert ran.exit_code == 2, ran.output[-3000:]
        said = one_line(ran)
        assert said == f"UNUSABLE INPUT: the proof from {server.url('/proof')}: {TOO_DEEP}"

        ran = verify_cli("verify", str(evidence["proof"]), "--keys", server.url("/keys"))
        assert ran.exit_code == 2, ran.output[-3000:]
        said = one_line(ran)
        assert said == f"UNUSABLE INPUT: the key ring from {server.url('/keys')}: {TOO_DEEP}"


def test_a_proof_with_a_5000_digit_integer_is_unusable_naming_the_limit(
    verify_cli: VerifyCli, evidence: dict[str, Path]
) -> None:
    proof = evidence["proof"]
    proof.write_text(proof.read_text().replace('"nonce": 0', f'"nonce": {HUGE_NUMBER}', 1))
    assert HUGE_NUMBER in proof.read_text()
    ran = verify_cli("verify", str(proof), "--keys", str(evidence["keys"]))
    assert ran.exit_code == 2, ran.output[-3000:]
    said = one_line(ran)
    assert said == (
        f"UNUSABLE INPUT: the proof file {proof}: a number of 5,000 digits, more than the 100 the verifiers read"
    )


@pytest.mark.parametrize(
    ("key", "first"), [("server_seed", "0" * 64), ("outcome", {"kind": "settled", "winners": [0]})]
)
def test_a_proof_naming_a_key_twice_is_unusable_though_its_last_values_verify(
    verify_cli: VerifyCli, evidence: dict[str, Path], key: str, first: Any
) -> None:
    """The last of two equal keys is what json.loads keeps, and the genuine proof's: a reader that keeps the
    first (a proxy, a log, an auditor's own tool) sees another seed or outcome. Such a proof is refused."""
    proof = evidence["proof"]
    genuine = proof.read_text()
    twice = "{" + json.dumps(key) + ": " + json.dumps(first) + ", " + genuine[1:]
    assert json.loads(twice) == json.loads(genuine)
    proof.write_text(twice)
    ran = verify_cli(
        "verify", str(proof), "--keys", str(evidence["keys"]), "--receipt", str(evidence["receipt"])
    )
    assert ran.exit_code == 2, ran.output[-3000:]
    said = one_line(ran)
    assert (
        f'the proof file {proof}: the key "{key}" appears more than once in one object (at /{key})' in said
    ), said


def test_a_url_that_trickles_its_answer_is_given_up_at_the_deadline(
    verify_cli: VerifyCli, evidence: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A byte every half second never trips the socket's 10 s timeout; the whole fetch's deadline does
    (2 s here, 30 s as shipped). The server gives up after 12 s, so without a deadline this ends too."""
    monkeypatch.setattr("pokna_verify.cli.url_fetch.FETCH_DEADLINE_SECONDS", 2.0)
    with hostile_server({}, drip_seconds=0.5, lifetime_seconds=12) as server:
        drip = server.url("/drip")
        for argv in (("verify", drip), ("verify", str(evidence["proof"]), "--keys", drip)):
            ran = verify_cli(*argv)
            assert ran.exit_code == 2, ran.output[-3000:]
            said = one_line(ran)
            assert f"from {drip}: no whole answer within 2 s, the limit for one fetch" in said, said


# --- endless inputs, each command its own process with 1 GiB of address space ------------------------------


@pytest.mark.parametrize("entry_point", sorted(COMMANDS))
def test_dev_zero_and_an_endless_fifo_are_read_no_further_than_the_limit(
    entry_point: str, evidence: dict[str, Path], tmp_path: Path
) -> None:
    proof_command, audit_command = COMMANDS[entry_point]
    proof = str(evidence["proof"])
    for argv, named in (
        ([*proof_command, "/dev/zero"], "the proof file /dev/zero"),
        ([*proof_command, proof, "--keys", "/dev/zero"], "the key ring file /dev/zero"),
        ([*proof_command, proof, "--receipt", "/dev/zero"], "the receipt file /dev/zero"),
        ([*proof_command, proof, "--beacon-chain", "/dev/zero"], "the beacon chain file /dev/zero"),
    ):
        ran = run_bounded(argv)
        assert ran.exit_code == 2, ran.stderr[-3000:]
        assert (
            ran.stderr.strip()
            == f"UNUSABLE INPUT: {named} is {TOO_LARGE}, the most the verifiers read of one document"
        )

    ran = run_bounded([*audit_command, "/dev/zero"])
    assert ran.exit_code == 2, ran.stderr[-3000:]
    assert ran.stderr.strip() == (
        "UNUSABLE INPUT: /dev/zero: line 1 is longer than 16 MiB (16,777,216 bytes), the most the verifiers read "
        "of one line"
    )
    ran = run_bounded([*audit_command, "-"], stdin=Path("/dev/zero"))
    assert ran.exit_code == 2, ran.stderr[-3000:]
    assert ran.stderr.strip().startswith("UNUSABLE INPUT: stdin: line 1 is longer than 16 MiB"), ran.stderr

    with endless_fifo(tmp_path / "proof.fifo") as fifo:
        ran = run_bounded([*proof_command, str(fifo)])
    assert ran.exit_code == 2, ran.stderr[-3000:]
    assert f"the proof file {fifo} is {TOO_LARGE}" in ran.stderr, ran.stderr
    with endless_fifo(tmp_path / "export.fifo", chunk=b'{"seq": 1}' * 6000) as fifo:
        ran = run_bounded([*audit_command, str(fifo)])
    assert ran.exit_code == 2, ran.stderr[-3000:]
    assert f"{fifo}: line 1 is longer than 16 MiB" in ran.stderr, ran.stderr


def test_pokna_audit_report_reads_stdin_within_the_limit(tmp_path: Path) -> None:
    ran = run_bounded(
        [POKNA, "audit", "report", "-", "--html", str(tmp_path / "report.html")], stdin=Path("/dev/zero")
    )
    assert ran.exit_code == 2, ran.stderr[-3000:]
    assert ran.stderr.strip().startswith("UNUSABLE INPUT: stdin: line 1 is longer than 16 MiB"), ran.stderr
    assert not (tmp_path / "report.html").exists()


@pytest.mark.parametrize(("field", "value"), [("client_seed", "\ud800"), ("game_id", "game-\udfff")])
def test_a_proof_holding_a_lone_surrogate_is_unusable_naming_where(
    verify_cli: VerifyCli, evidence: dict[str, Path], field: str, value: str
) -> None:
    """JSON may write `\\ud800` alone, which is no text UTF-8 can carry: recomputing the rolls from such a
    client seed, or printing such a game id, raised UnicodeEncodeError (a fuzzing round's find)."""
    proof = evidence["proof"]
    proof.write_text(json.dumps({**json.loads(proof.read_text()), field: value}))
    ran = verify_cli(
        "verify", str(proof), "--keys", str(evidence["keys"]), "--receipt", str(evidence["receipt"])
    )
    assert ran.exit_code == 2, ran.output[-3000:]
    assert one_line(ran) == (
        f"UNUSABLE INPUT: the proof file {proof}: a string holds a lone UTF-16 surrogate (at /{field}), which "
        "is not text: refused, since readers differ on what it says"
    )


NO_KEYS = "the public log place the link carries could not be checked: no keys to check the checkpoint's signature with"


def _logged_link() -> dict[str, Any]:
    """The sample game's link, with its place in a one-game log whose checkpoint NEW_KEY signed."""
    proof = sample_proof()
    entry = game_leaf_entry(proof, status="settled", pot_account_id="acct_pot")
    note = StandInLog(NEW_KEY, History([entry], 1)).checkpoint()
    place = {"status": "logged", "log_url": "/v1/logs/t", "leaf_index": 0, "inclusion_path": []}
    return {
        "object": "fairness_link",
        "game_id": proof["game_id"],
        "status": "settled",
        "revealed": True,
        "commitment": sample_receipt(),
        "proof": proof,
        "keys_url": "/v1/fairness/keys",
        "public_log": {**place, "checkpoint": note, "entry": entry.decode()},
    }


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"entry": DEEP_ARRAY}, f"the log's entry: {TOO_DEEP}"),
        ({"entry": '{"leaf": "pokna.game/1"'}, "the log's entry is not a pokna.game/1 leaf"),
        ({"entry": None}, "the link's public_log lacks its checkpoint, entry or leaf index"),
        ({"leaf_index": "0"}, "the link's public_log lacks its checkpoint, entry or leaf index"),
        # JSON's false is no leaf index (the page refuses it); Python's bool is an int, and it proved leaf 0
        ({"leaf_index": False}, "the link's public_log lacks its checkpoint, entry or leaf index"),
        ({"inclusion_path": None}, "the link's inclusion_path is not a list of base64 hashes"),
        ({"checkpoint": "standin.test/games/tnt_standin\n1\n"}, "a signed note is text, a blank line"),
    ],
)
def test_a_link_carrying_a_malformed_place_in_the_log_fails_the_verification(
    verify_cli: VerifyCli, evidence: dict[str, Path], tmp_path: Path, change: dict[str, Any], said: str
) -> None:
    """The place is the link's, beside the proof, and not signed: whoever changes a byte of it must make
    the check fail, as the verifier page's does (docs/fairness.md, section 6). It was 'UNUSABLE', exit 0,
    VALID (a fuzzing round's find); and an entry nested 100,000 deep raised RecursionError."""
    link = _logged_link()
    saved = tmp_path / "link.json"
    saved.write_text(json.dumps(link))
    ran = verify_cli("verify", str(saved), "--keys", str(evidence["keys"]))
    assert (ran.exit_code, ran.output.splitlines()[-1]) == (0, f"public log: INCLUDED: {LOGGED_AS}"), (
        ran.output
    )

    unkeyed = verify_cli("verify", str(saved))  # a saved link has no keys_url to follow: partly verified
    assert (unkeyed.exit_code, unkeyed.output.splitlines()[-1]) == (4, f"public log: UNUSABLE: {NO_KEYS}"), (
        unkeyed.output
    )

    saved.write_text(json.dumps({**link, "public_log": {**link["public_log"], **change}}))
    for keys in (["--keys", str(evidence["keys"])], []):  # without keys too, as on the page
        ran = verify_cli("verify", str(saved), *keys)
        assert ran.exit_code == 1, ran.output[-3000:]
        assert ran.output.splitlines()[-1].startswith(
            f"public log: FAILED: the public log place the link carries is malformed: {said}"
        ), ran.output[-3000:]


def test_a_link_carrying_the_leaf_of_another_proof_fails_the_verification(
    verify_cli: VerifyCli, evidence: dict[str, Path], tmp_path: Path
) -> None:
    """The carried entry must be the leaf of the very proof beside it: one made of another proof of the game
    (here signed by another key) fails, with keys or without, as `--log` does for a log's answer."""
    link = _logged_link()
    other = {**link["proof"], "signature": sample_proof(STRANGER_KEY)["signature"]}
    entry = game_leaf_entry(other, status="settled", pot_account_id="acct_pot").decode()
    saved = tmp_path / "link.json"
    saved.write_text(json.dumps({**link, "public_log": {**link["public_log"], "entry": entry}}))
    origin = link["public_log"]["checkpoint"].split("\n", 1)[0]
    for keys in (["--keys", str(evidence["keys"])], []):
        ran = verify_cli("verify", str(saved), *keys)
        assert ran.exit_code == 1, ran.output[-3000:]
        assert ran.output.splitlines()[-1] == (
            f"public log: FAILED: {origin} logged another proof for game {link['game_id']} than this one: "
            f"{entry[:200]}"
        ), ran.output[-3000:]


def test_a_served_link_whose_addresses_urllib_cannot_split_is_answered_not_a_traceback(
    verify_cli: VerifyCli, evidence: dict[str, Path], tmp_path: Path
) -> None:
    """A link's `keys_url` and `public_log.log_url` are resolved against the link's URL; "http://[::1" made
    urljoin raise ValueError (a fuzzing round's find). The keys are then not had (exit 4, said why), and
    the state file's consistency check is unusable."""
    link = _logged_link()
    broken = "http://[::1"
    served = {
        "/v1/fairness/proofs/keys": json.dumps({**link, "keys_url": broken}).encode(),
        "/v1/fairness/proofs/log": json.dumps(
            {**link, "public_log": {**link["public_log"], "log_url": broken}}
        ).encode(),
        "/v1/fairness/keys": json.dumps(KEY_RING.to_json()).encode(),
    }
    with hostile_server(served) as server:
        ran = verify_cli("verify", server.url("/v1/fairness/proofs/keys"))
        assert ran.exit_code == 4, ran.output[-3000:]
        assert f"the link's keys_url {broken!r} is no address (Invalid IPv6 URL)" in ran.output, ran.output

        state = tmp_path / "witness.json"
        ran = verify_cli("verify", server.url("/v1/fairness/proofs/log"), "--state", str(state))
        assert ran.exit_code == 0, ran.output[-3000:]
        assert ran.output.splitlines()[-1] == (
            "public log: UNUSABLE: the public log place the link carries could not be checked: the link's "
            f"log_url {broken!r} is no address (Invalid IPv6 URL)"
        )
