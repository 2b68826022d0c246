"""`pokna-verify log watch` as a witness, against a stand-in log on 127.0.0.1 whose histories the test
chooses: it keeps the first checkpoint, accepts one that extends it, and exits 1 on a fork (two witnesses
shown two histories; a rewritten past; a corrupted proof), a rollback (of the games or of the books) or a
bad signature, each time leaving the state file as it was."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from pokna_verify.cli import main
from pokna_verify.fairness.keyring import KeyRing
from support.hostile_inputs import DEEP_ARRAY, hostile_server
from support.log_stand_in import History, StandInLog, serving


def entries(count: int, fork_at: int | None = None) -> list[bytes]:
    return [
        json.dumps({"game_id": f"game_{i}", "fork": i == fork_at}, sort_keys=True).encode()
        for i in range(count)
    ]


HEADS = {0: (10, "aa" * 32)}


@pytest.fixture
def log() -> Iterator[StandInLog]:
    with serving(StandInLog(Ed25519PrivateKey.generate(), History(entries(12), 5, dict(HEADS)))) as stand_in:
        yield stand_in


def watch(log: StandInLog, state: Path, *extra: str) -> tuple[int, dict[str, object]]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["log", "watch", log.url, "--state", str(state), "--json", *extra])
    return code, json.loads(out.getvalue())


def kept_size(state: Path) -> int:
    (entry,) = json.loads(state.read_text())["logs"].values()
    return int(entry["checkpoint"].split("\n")[1])


def test_the_first_checkpoint_is_kept_and_a_grown_log_is_accepted(log: StandInLog, tmp_path: Path) -> None:
    state = tmp_path / "witness.json"
    assert watch(log, state) == (
        0,
        {
            "verdict": "first",
            "consistent": True,
            "detail": watch_detail(log, 5),
            "origin": log.origin,
            "size": 5,
            "kept_size": None,
        },
    )
    assert kept_size(state) == 5
    assert watch(log, state)[1]["verdict"] == "same"
    log.history = History(entries(12), 9, {0: (14, "bb" * 32)})
    code, said = watch(log, state)
    assert (code, said["verdict"], said["kept_size"], said["size"]) == (0, "extended", 5, 9)
    assert kept_size(state) == 9


def watch_detail(log: StandInLog, size: int) -> str:
    return f"first checkpoint of {log.origin}: {size} games"


def test_two_witnesses_shown_two_histories_catch_the_fork(log: StandInLog, tmp_path: Path) -> None:
    """The log shows witness A one history and witness B another of the same size; when either is later
    shown the other's (or compares notes by running with the other's state), no proof joins them."""
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    assert watch(log, first)[0] == 0
    log.history = History(entries(12, fork_at=2), 5, dict(HEADS))
    assert watch(log, second)[0] == 0  # B alone cannot tell: it has nothing to compare with
    assert watch(log, first)[1]["verdict"] == "fork"  # same size, another root
    log.history = History(entries(12), 8, dict(HEADS))  # the honest history goes on
    assert watch(log, first)[0] == 0
    before = second.read_text()
    code, said = watch(log, second)
    assert (code, said["verdict"]) == (1, "fork")
    assert "does not extend" in str(said["detail"])
    assert second.read_text() == before, "the evidence of the fork is kept"


def test_a_rollback_of_the_games_or_of_the_books_exits_1(log: StandInLog, tmp_path: Path) -> None:
    state = tmp_path / "witness.json"
    log.history = History(entries(12), 9, dict(HEADS))
    assert watch(log, state)[0] == 0
    log.history = History(entries(12), 6, dict(HEADS))
    assert watch(log, state)[:1] == (1,)
    assert watch(log, state)[1]["verdict"] == "rollback"
    log.history = History(entries(12), 10, {0: (9, "cc" * 32)})
    code, said = watch(log, state)
    assert (code, said["verdict"]) == (1, "rollback")
    assert "the books went back" in str(said["detail"])
    assert kept_size(state) == 9


def test_a_corrupted_consistency_proof_or_a_bad_signature_exits_1(log: StandInLog, tmp_path: Path) -> None:
    state = tmp_path / "witness.json"
    assert watch(log, state)[0] == 0
    log.history = History(entries(12), 11, dict(HEADS))
    log.corrupt_proofs = True
    assert watch(log, state)[1]["verdict"] == "fork"
    log.corrupt_proofs = False
    honest_key = log.key
    log.key = Ed25519PrivateKey.generate()  # serves a note signed by a key its published ring does not hold
    keys = tmp_path / "keys.json"

    keys.write_text(json.dumps(KeyRing.of(honest_key.public_key()).to_json()))
    code, said = watch(log, state, "--keys", str(keys))
    assert (code, said["verdict"]) == (1, "bad_signature")
    assert kept_size(state) == 5


def test_unusable_input_exits_2(log: StandInLog, tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        assert main(["log", "watch", f"{log.base}/v1/nothing", "--state", str(tmp_path / "s.json")]) == 2
    assert "is not a log's address" in err.getvalue()
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):  # urlsplit's ValueError, a traceback before
        assert main(["log", "watch", "http://[::1/v1/logs/t", "--state", str(tmp_path / "s.json")]) == 2
    assert (
        err.getvalue() == "UNUSABLE INPUT: http://[::1/v1/logs/t is not a log's address: Invalid IPv6 URL\n"
    )
    state = tmp_path / "broken.json"
    state.write_text("[]")
    assert watch(log, state)[0] == 2


TOO_DEEP = "JSON nested deeper than 64 levels, the most the verifiers read"


def test_a_state_file_nested_100000_deep_is_unusable(log: StandInLog, tmp_path: Path) -> None:
    """It was read with json.loads, which raised RecursionError (a fuzzing round's find); it is read within
    the limits every other input is (pokna_verify.bounded_input)."""
    state = tmp_path / "deep.json"
    state.write_text(DEEP_ARRAY)
    assert watch(log, state) == (
        2,
        {"verdict": "unusable", "consistent": False, "detail": f"the state file {state}: {TOO_DEEP}"},
    )


def test_a_consistency_proof_or_a_problem_nested_deep_is_unusable(
    log: StandInLog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both were read with json.loads, which raised RecursionError (a fuzzing round's find)."""
    state = tmp_path / "witness.json"
    assert watch(log, state)[0] == 0
    log.history = History(entries(12), 11, dict(HEADS))
    honest = log.answer
    monkeypatch.setattr(
        log,
        "answer",
        lambda path, query: (
            (200, "application/json", DEEP_ARRAY) if path.endswith("/consistency") else honest(path, query)
        ),
    )
    code, said = watch(log, state)
    assert (code, said["verdict"]) == (2, "unusable")
    assert str(said["detail"]).endswith(f"/consistency?first=5&second=11: {TOO_DEEP}"), said
    deep_problem = "[" * 30_000 + "]" * 30_000  # an error's body is read to 64 KiB, for its `detail`
    monkeypatch.setattr(
        log,
        "answer",
        lambda path, query: (
            (422, "application/problem+json", deep_problem)
            if path.endswith("/consistency")
            else honest(path, query)
        ),
    )
    code, said = watch(log, state)
    assert (code, said["verdict"]) == (2, "unusable")
    assert str(said["detail"]).endswith("/consistency?first=5&second=11: it answered HTTP 422"), said
    assert kept_size(state) == 5


def test_a_log_that_trickles_its_checkpoint_is_given_up_at_the_deadline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A byte every half second never trips the socket's 10 s timeout; the whole fetch's deadline does (2 s
    here, 30 s as shipped), as for a proof's URL. The log's own fetches had no deadline (a fuzzing round's
    find): the server gives up after 12 s, so without one this ends too, saying something else."""
    monkeypatch.setattr("pokna_verify.cli.url_fetch.FETCH_DEADLINE_SECONDS", 2.0)
    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps(KeyRing.of(Ed25519PrivateKey.generate().public_key()).to_json()))
    with hostile_server({}, drip_seconds=0.5, lifetime_seconds=12) as server:
        log_url = server.url("/drip/v1/logs/tnt_slow")
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            code = main(["log", "watch", log_url, "--state", str(tmp_path / "s.json"), "--keys", str(keys)])
    assert code == 2, err.getvalue()
    assert err.getvalue() == (
        f"UNUSABLE INPUT: cannot fetch the checkpoint from {log_url}/checkpoint: no whole answer within 2 s, "
        "the limit for one fetch\n"
    )


def test_a_log_that_signs_under_a_new_origin_is_not_a_new_log(log: StandInLog, tmp_path: Path) -> None:
    """The state is kept by origin: a log that signed its checkpoints under another name (its origin's
    host changed, or it chose to) was judged `first` and kept beside the old one, exit 0, whatever it now
    shows: a rolled-back history escaped its witnesses by a rename. The origin its address signed under
    before is pinned (docs/operations.md: "the name ... which witnesses pin")."""
    state = tmp_path / "witness.json"
    log.history = History(entries(12), 9, dict(HEADS))
    assert watch(log, state)[0] == 0
    before = state.read_text()
    kept_origin = log.origin
    log.origin_prefix = "renamed.test/games"
    log.history = History(entries(12, fork_at=1), 3, {})  # another, shorter history: no proof could join
    code, said = watch(log, state)
    assert (code, said["verdict"]) == (1, "wrong_origin"), said
    assert kept_origin in str(said["detail"])
    assert log.origin in str(said["detail"])
    assert state.read_text() == before, "the evidence is kept, and the new name is not"


def test_a_checkpoint_of_another_tenants_log_is_not_this_logs(log: StandInLog, tmp_path: Path) -> None:
    """The log's address names its tenant, and its origin is `<prefix>/<tenant>` (docs/fairness.md): a
    checkpoint signed as another tenant's log, served here, was judged `first` of that log, exit 0."""
    state = tmp_path / "witness.json"
    log.origin_tenant = "tnt_another"
    code, said = watch(log, state)
    assert (code, said["verdict"]) == (1, "wrong_origin"), said
    assert "tnt_another" in str(said["detail"])
    assert not state.exists()
    log.origin_tenant = "tnt_standin"
    escaped = log.url.replace("tnt_standin", "tnt%5Fstandin")  # the same log: the service decodes its path
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        assert main(["log", "watch", escaped, "--state", str(state), "--json"]) == 0, out.getvalue()


@pytest.mark.parametrize(
    "line",
    [
        f"ledger 1 {'1' * 5000} {'bb' * 32}",  # int() refused 4300+ digits: a traceback, not a verdict
        f"ledger 0 11 {'bb' * 32}",  # chain 0 twice: which head is pinned depended on the reader
        f"ledger 1 011 {'bb' * 32}",  # not one head: it was skipped, and chain 1 was pinned nowhere
        f"ledger 1 11 {'BB' * 32}",
    ],
)
def test_a_checkpoint_with_a_ledger_line_that_is_not_one_head_is_unusable(
    log: StandInLog, tmp_path: Path, line: str
) -> None:
    """A `ledger` extension line is Pokna's: a signed checkpoint whose line is not one chain's head, once,
    in order, pins no book an auditor can hold the operator to (a chain with no head requires none of its
    games to be logged: pokna_verify.bundle.public_log). It was skipped or read last-wins, or crashed the
    witness (ValueError out of int()); it is a malformed checkpoint, exit 2, the state left as it was."""
    state = tmp_path / "witness.json"
    assert watch(log, state)[0] == 0
    log.history = History(entries(12), 9, dict(HEADS), extra_lines=(line,))
    code, said = watch(log, state)
    assert (code, said["verdict"]) == (2, "unusable"), said
    assert "ledger" in str(said["detail"])
    assert kept_size(state) == 5


def test_two_checkpoints_of_one_size_that_pin_different_books_are_a_fork(
    log: StandInLog, tmp_path: Path
) -> None:
    """The log signs one checkpoint per size. One of the same size and root as the kept one whose ledger
    lines pin more (or other) books is a second statement about that tree: shown to two witnesses, a split
    view of the books. Only heads that went back were caught; heads ahead were 'same', exit 0."""
    state = tmp_path / "witness.json"
    assert watch(log, state)[0] == 0
    before = state.read_text()
    log.history = History(entries(12), 5, {**HEADS, 1: (3, "bb" * 32)})
    code, said = watch(log, state)
    assert (code, said["verdict"]) == (1, "fork"), said
    assert "ledger" in str(said["detail"])
    assert state.read_text() == before
    log.history = History(entries(12), 5, dict(HEADS))  # the very checkpoint kept, signed again: the same
    assert watch(log, state)[1]["verdict"] == "same"


def test_a_state_file_of_the_previous_version_pins_the_logs_address_at_the_next_watch(
    log: StandInLog, tmp_path: Path
) -> None:
    """A state file written before the address was kept (`{"checkpoint": note}` alone) is read as it is,
    and the next watch that accepts the kept checkpoint records the address beside it, even when the log
    has not grown: otherwise a quiet log could rename itself after the upgrade and escape as a new log."""
    state = tmp_path / "witness.json"
    log.history = History(entries(12), 9, dict(HEADS))
    assert watch(log, state)[0] == 0
    document = json.loads(state.read_text())
    for entry in document["logs"].values():
        del entry["url"]  # as the previous version wrote it
    state.write_text(json.dumps(document))
    assert watch(log, state)[1]["verdict"] == "same"
    log.origin_prefix = "renamed.test/games"
    log.history = History(entries(12, fork_at=1), 3, {})
    code, said = watch(log, state)
    assert (code, said["verdict"]) == (1, "wrong_origin"), said
