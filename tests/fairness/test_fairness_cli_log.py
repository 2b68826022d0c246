"""`pokna verify` / `pokna-verify proof --log URL`: the proof being verified must be the one its tenant's
public log holds, proven in the log's signed checkpoint; a game not logged yet is said plainly and fails
nothing; a log holding another proof for the game, or a path that does not lead to the signed root, fails
the verification; `--state` keeps the checkpoint as a witness would and catches a fork."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fairness_samples import KEY_RING, NEW_KEY, STRANGER_KEY, sample_proof, sample_receipt

from pokna_verify.tlog.game_leaf import game_leaf_entry
from support.log_stand_in import History, StandInLog, serving
from support.verify_cli import VerifyCli

POT = "acct_pot_0001"


def other_games(count: int, salt: str = "") -> list[bytes]:
    return [json.dumps({"game_id": f"game-other-{salt}{i}"}).encode() for i in range(count)]


def logged(proof: dict[str, object], *, before: int = 3, after: int = 2, salt: str = "") -> History:
    entry = game_leaf_entry(proof, status="settled", pot_account_id=POT)
    games = [*other_games(before, salt), entry, *other_games(after, salt + "late")]
    return History(games, len(games))


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    paths = {name: tmp_path / f"{name}.json" for name in ("proof", "receipt", "keys")}
    paths["proof"].write_text(json.dumps(sample_proof()))
    paths["receipt"].write_text(json.dumps(sample_receipt()))
    paths["keys"].write_text(json.dumps(KEY_RING.to_json()))
    return paths


@pytest.fixture
def log() -> Iterator[StandInLog]:
    with serving(StandInLog(NEW_KEY, logged(sample_proof()))) as stand_in:
        yield stand_in


def verify(
    verify_cli: VerifyCli, files: dict[str, Path], log: StandInLog, *extra: str
) -> tuple[int, dict[str, object]]:
    ran = verify_cli(
        "verify",
        str(files["proof"]),
        "--keys",
        str(files["keys"]),
        "--receipt",
        str(files["receipt"]),
        "--log",
        log.url,
        "--json",
        *extra,
    )
    return ran.exit_code, json.loads(ran.stdout)


def test_a_logged_game_is_game_n_of_the_log(
    verify_cli: VerifyCli, files: dict[str, Path], log: StandInLog
) -> None:
    code, report = verify(verify_cli, files, log)
    assert code == 0, report
    assert report["public_log"] == {
        "status": "included",
        "detail": f"game #4 of {log.origin}'s public log, proven in its signed checkpoint of 6 games",
        "origin": log.origin,
        "game_number": 4,
        "tree_size": 6,
    }
    text = verify_cli(
        "verify",
        str(files["proof"]),
        "--keys",
        str(files["keys"]),
        "--receipt",
        str(files["receipt"]),
        "--log",
        log.url,
    )
    assert text.exit_code == 0
    assert f"public log: INCLUDED: game #4 of {log.origin}'s public log" in text.stdout


def test_a_game_not_logged_yet_is_said_and_fails_nothing(
    verify_cli: VerifyCli, files: dict[str, Path], log: StandInLog
) -> None:
    log.history = History(other_games(3), 3)
    code, report = verify(verify_cli, files, log)
    assert code == 0
    public_log = report["public_log"]
    assert isinstance(public_log, dict)
    assert public_log["status"] == "not_logged"
    assert "is not in" in public_log["detail"]
    assert "check again later" in public_log["detail"]


def test_a_log_holding_another_proof_or_a_broken_path_fails_the_verification(
    verify_cli: VerifyCli, files: dict[str, Path], log: StandInLog
) -> None:
    other = copy.deepcopy(sample_proof())
    other["signature"] = sample_proof(STRANGER_KEY)["signature"]
    log.history = logged(other)
    code, report = verify(verify_cli, files, log)
    assert (code, report["public_log"]["status"]) == (1, "failed")  # type: ignore[index]
    assert "another proof" in report["public_log"]["detail"]  # type: ignore[index]
    log.history = logged(sample_proof())
    log.corrupt_proofs = True
    code, report = verify(verify_cli, files, log)
    assert (code, report["public_log"]["status"]) == (1, "failed")  # type: ignore[index]


def test_the_checkpoint_a_game_was_proven_in_is_kept_and_a_fork_caught(
    verify_cli: VerifyCli, files: dict[str, Path], log: StandInLog, tmp_path: Path
) -> None:
    state = tmp_path / "witness.json"
    assert verify(verify_cli, files, log, "--state", str(state))[0] == 0
    assert log.origin in json.loads(state.read_text())["logs"]
    log.history = logged(sample_proof(), before=3, after=5, salt="forked")  # the same game, another history
    code, report = verify(verify_cli, files, log, "--state", str(state))
    assert (code, report["public_log"]["status"]) == (1, "failed")  # type: ignore[index]
    assert "fork" in report["public_log"]["detail"]  # type: ignore[index]


def test_a_log_address_serving_another_tenants_checkpoint_fails_the_verification(
    verify_cli: VerifyCli, files: dict[str, Path], log: StandInLog
) -> None:
    """`--log https://host/v1/logs/TENANT` asks TENANT's log; a checkpoint signed as another tenant's log
    (`<prefix>/tnt_another`) proves the game in that log, not in the one asked: it said INCLUDED, exit 0,
    naming the other origin. `log watch` refuses the same checkpoint (wrong_origin)."""
    log.origin_tenant = "tnt_another"
    code, report = verify(verify_cli, files, log)
    assert (code, report["public_log"]["status"]) == (1, "failed"), report  # type: ignore[index]
    assert "not tenant tnt_standin's log" in report["public_log"]["detail"]  # type: ignore[index]


@pytest.mark.parametrize("game_id", ["game#1", "game/../1", "game?tree_size=1&x"])
def test_a_game_id_is_one_segment_of_the_inclusion_address(
    verify_cli: VerifyCli, files: dict[str, Path], log: StandInLog, game_id: str
) -> None:
    """The proof's game id went into the log's address as it was: `#` cut the address short, `/..` and `?`
    made it another address, and a logged game was said NOT LOGGED YET. It is percent-encoded, one segment,
    as the service reads it back. (The proof itself no longer verifies, its id changed: only the log's
    verdict is looked at.)"""
    proof = {**sample_proof(), "game_id": game_id}
    files["proof"].write_text(json.dumps(proof))
    log.history = logged(proof)
    _, report = verify(verify_cli, files, log)
    assert report["public_log"]["status"] == "included", report["public_log"]  # type: ignore[index]


def test_a_state_file_of_the_previous_version_gets_the_logs_address_and_a_rename_is_caught(
    verify_cli: VerifyCli, files: dict[str, Path], log: StandInLog, tmp_path: Path
) -> None:
    """A state file without the log's address (as the previous version wrote it): the next verification
    proven in the kept checkpoint records the address, so the log signing under a new name later fails."""
    state = tmp_path / "witness.json"
    assert verify(verify_cli, files, log, "--state", str(state))[0] == 0
    document = json.loads(state.read_text())
    for entry in document["logs"].values():
        del entry["url"]
    state.write_text(json.dumps(document))
    assert verify(verify_cli, files, log, "--state", str(state))[0] == 0
    log.origin_prefix = "renamed.test/games"
    code, report = verify(verify_cli, files, log, "--state", str(state))
    assert (code, report["public_log"]["status"]) == (1, "failed"), report  # type: ignore[index]
    assert "changes its name" in report["public_log"]["detail"]  # type: ignore[index]
