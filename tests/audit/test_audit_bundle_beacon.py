"""An audit bundle holding a beacon-mode game played over HTTP against a local drand relay (support.beacon_server,
a test chain) verifies when the auditor trusts that chain (`--beacon-chain`), on worker processes too; without
it the game fails its `beacon` check naming the untrusted chain; a roll's round edited in the bundle fails
naming the roll."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from pokna.settings import Settings
from pokna_verify.bundle import scan as bundle_scan
from pokna_verify.fairness.beacon import QUICKNET
from support.audit_bundles import lines_of, records
from support.beacon_game import beacon_settings, chain_file_of
from support.beacon_server import BeaconRelay, beacon_relay
from support.game_play import Api, new_tenant_key, obliging, play
from support.verify_cli import VerifyCli

_real_read_file_block = bundle_scan._read_file_block
_worker_lines: Path | None = None  # where a worker notes the first line of each block it read


@pytest.fixture
def relay() -> Iterator[BeaconRelay]:
    with beacon_relay(period=1, rounds_before_now=5, lifetime_seconds=240) as running:
        yield running


@pytest.fixture
def chain_file(tmp_path: Path, relay: BeaconRelay) -> Path:
    return chain_file_of(tmp_path, relay)


@pytest.fixture(name="settings")
def settings_for_the_relay(
    tmp_path: Path, database_url: str, relay: BeaconRelay, chain_file: Path
) -> Settings:
    return beacon_settings(tmp_path, database_url, relay, chain_file)


@pytest.fixture
def one_line_blocks(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Every line its own block, the pool from the first: which process reads a line is known from its
    number. Each block a worker reads is noted in the returned file."""
    monkeypatch.setattr(bundle_scan, "_BLOCK_BYTES", 1)
    monkeypatch.setattr(bundle_scan, "_POOL_AFTER_BLOCKS", 1)
    monkeypatch.setattr(bundle_scan, "_read_file_block", _read_file_block_noted)
    noted = tmp_path / "worker-lines.txt"
    noted.touch()
    monkeypatch.setitem(globals(), "_worker_lines", noted)
    return noted


def _read_file_block_noted(fileno: int, offset: int, size: int, first: int) -> Any:
    """bundle_scan's worker task, noting the block's first line (module level: sent to a worker by name)."""
    assert _worker_lines is not None
    with _worker_lines.open("a") as noted:
        noted.write(f"{first}\n")
    return _real_read_file_block(fileno, offset, size, first)


def _processes_with_a_worker_reading(line: int) -> int:
    """After the two opening lines, block i (here line i + 3) is read by this process when i % processes is
    processes - 1 (bundle_scan._scan), by a worker otherwise."""
    return next(processes for processes in range(2, 10) if (line - 3) % processes != processes - 1)


def _played(client: TestClient, sessions: sessionmaker[Session]) -> tuple[Api, str, str]:
    """A beacon-mode game and a default-mode game, each played to the end over HTTP."""
    api = Api(client, new_tenant_key(sessions))
    wallets = [api.wallet(400) for _ in range(3)]
    beacon = api.create_game(wallets[0], wallets[1:], stake=5, fairness_mode="beacon")
    assert beacon["fairness"]["mode"] == "beacon"
    beacon = play([api], beacon, obliging)
    default = play([api], api.create_game(wallets[1], [wallets[0], wallets[2]], stake=5), obliging)
    assert default["fairness"]["mode"] == "stake"
    return api, beacon["id"], default["id"]


def _game_line(documents: list[dict[str, Any]], game_id: str) -> int:
    return next(
        number
        for number, document in enumerate(documents, start=1)
        if document["type"] == "game" and document["game_id"] == game_id
    )


def test_a_bundle_with_a_beacon_game_verifies_only_with_its_chain_trusted(
    verify_cli: VerifyCli,
    client: TestClient,
    sessions: sessionmaker[Session],
    relay: BeaconRelay,
    chain_file: Path,
    tmp_path: Path,
    one_line_blocks: Path,
) -> None:
    api, beacon_id, default_id = _played(client, sessions)
    response = api.get("/v1/audit/bundle")
    assert response.status_code == 200, response.text
    documents = records(response.text.splitlines(keepends=True))
    beacon_line = _game_line(documents, beacon_id)
    assert documents[beacon_line - 1]["proof"]["protocol"] == "pokna-hmac-sha256-drand-v1"
    bundle, keys = tmp_path / "bundle.jsonl", tmp_path / "keys.json"
    bundle.write_text(response.text)
    keys.write_text(json.dumps(api.key_ring().to_json()))
    processes = str(_processes_with_a_worker_reading(beacon_line))

    def audit(*options: str) -> Any:
        return verify_cli("audit", "verify", str(bundle), "--keys", str(keys), *options)

    trusted = audit("--beacon-chain", str(chain_file), "--processes", processes)
    assert trusted.exit_code == 0, trusted.output
    assert beacon_line in {int(line) for line in one_line_blocks.read_text().split()}  # a worker read it
    assert f"  beacon         also trusted (--beacon-chain): chain {relay.chain.chain_hash}, key " in (
        trusted.output
    )
    assert trusted.output.rstrip().endswith("VALID")
    as_json = audit("--beacon-chain", str(chain_file), "--processes", processes, "--json")
    assert as_json.exit_code == 0, as_json.output
    report = json.loads(as_json.output)
    assert report["verdict"] == "valid"
    assert report["games"] == {"settled": 2}
    assert report["beacon_chains_trusted"] == [QUICKNET.to_json(), relay.chain.to_json()]
    one_process = audit("--beacon-chain", str(chain_file), "--processes", "1", "--json")
    assert json.loads(one_process.output) == report

    # Untrusted, the test chain is anyone's: its key's holder could have chosen every round.
    for untrusted in (audit("--processes", processes, "--json"), audit("--processes", "1", "--json")):
        assert untrusted.exit_code == 1, untrusted.output
        report = json.loads(untrusted.output)
        assert "beacon_chains_trusted" not in report
        [finding] = report["findings"]
        assert (finding["line"], finding["record"], finding["id"]) == (beacon_line, "game", beacon_id)
        assert finding["problem"].startswith(f"proof check beacon: beacon_chain {relay.chain.chain_hash} ")
        assert "is not a public beacon this verifier trusts" in finding["problem"]
    text = audit("--processes", processes)
    assert f"FAIL  line {beacon_line}  game {beacon_id}: proof check beacon: beacon_chain" in text.output
    assert text.output.rstrip().endswith("INVALID: 1 finding(s)")
    assert default_id not in text.output

    # One roll's randomness edited in the bundle: the beacon check names the roll (its signature fails too).
    rolls = documents[beacon_line - 1]["proof"]["rolls"]
    edited = rolls[len(rolls) // 2]
    edited["beacon"]["randomness"] = relay.key.sign(edited["beacon"]["round"] + 1).randomness
    bundle.write_text("".join(lines_of(documents)))
    tampered = audit("--beacon-chain", str(chain_file), "--processes", processes, "--json")
    assert tampered.exit_code == 1, tampered.output
    problems = [finding["problem"] for finding in json.loads(tampered.output)["findings"]]
    [beacon_problem] = [problem for problem in problems if problem.startswith("proof check beacon:")]
    assert f"roll nonce {edited['nonce']}: round {edited['beacon']['round']}: " in beacon_problem
    assert any(problem.startswith("proof check signature:") for problem in problems), problems
    one_process = audit("--beacon-chain", str(chain_file), "--processes", "1", "--json")
    assert json.loads(one_process.output) == json.loads(tampered.output)
