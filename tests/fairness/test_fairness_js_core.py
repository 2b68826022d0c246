"""The page's checking core (verifier/pokna_verify/js, the ES module `pokna-verify`) under Node, with no browser.

Node imports it as an integrator would: a scratch project whose `node_modules/pokna-verify` is the core's
folder, so its package.json decides what `import ... from "pokna-verify"` is. Two runs of `node --test`
(tests/fairness/js/): the published vectors, read from docs/fairness.md itself; and real proofs made by the
service (in-process, on a fresh database) in both fairness modes, the beacon mode against a test drand relay,
with tampered copies, each judged by the core as the Python verifier judges it. Nothing is fetched: the
documents are handed over. Node is a prerequisite (.ci/run installs it), so a missing `node` fails.
"""

from __future__ import annotations

import copy
import json
import os
import random
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fairness_samples import CHECKS, STRANGER_KEY
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from pokna.runtime import Runtime
from pokna.settings import Settings
from pokna_verify.crypto.signing import sign_document
from pokna_verify.fairness.beacon import QUICKNET, BeaconChain
from pokna_verify.fairness.errors import MalformedProofError
from pokna_verify.fairness.keyring import KeyRing
from pokna_verify.fairness.proof_replay import replay_proof
from pokna_verify.fairness.verification import CheckStatus, VerificationReport, verify_proof
from support.beacon_game import beacon_settings, chain_file_of
from support.beacon_server import BeaconRelay, beacon_relay
from support.game_play import Api, Game, Policy, new_tenant_key, obliging, play, random_policy

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "verifier" / "pokna_verify" / "js"
NODE_TESTS = Path(__file__).parent / "js"
VENDORED = "noble-bls12-381.js"
MAX_LINES = 400  # as tests/test_architecture.py holds the Python modules to
# Messages the core words as the Python verifier does when a check fails; the signature's and the
# replay's are its own (a second implementation, as on the page: test_fairness_browser_verifier.py).
OWN_WORDS = {"signature", "replay"}


def node_binary() -> str:
    binary = shutil.which("node")
    if binary is None:
        pytest.fail("node is not installed: it is a prerequisite (README, Set-up; .ci/run installs it)")
    version = subprocess.run([binary, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    if int(version.lstrip("v").split(".")[0]) < 20:  # WebCrypto's global `crypto` and Ed25519
        pytest.fail(
            f"node {version} is too old: pokna-verify needs Node 20 or newer (its package.json's engines)"
        )
    return binary


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A Node project that depends on pokna-verify, as an integrator's would, with the tests copied in."""
    project = tmp_path / "integrator"
    (project / "node_modules").mkdir(parents=True)
    (project / "node_modules" / "pokna-verify").symlink_to(CORE, target_is_directory=True)
    (project / "package.json").write_text(
        json.dumps({"name": "integrator", "private": True, "type": "module"})
    )
    for test in NODE_TESTS.glob("*.test.mjs"):
        shutil.copy(test, project / test.name)
    return project


def run_node_tests(project: Path, test: str, env: dict[str, str]) -> dict[str, int]:
    """`node --test` on one file; its TAP summary, which must say every test ran and passed."""
    result = subprocess.run(
        [node_binary(), "--test", "--test-reporter=tap", test],
        cwd=project,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    summary = {name: int(count) for name, count in re.findall(r"^# (\w+) (\d+)$", result.stdout, re.M)}
    failures = "\n".join(line for line in result.stdout.splitlines() if line.startswith("not ok"))
    assert result.returncode == 0, f"{failures}\n{result.stdout[-8000:]}{result.stderr[-4000:]}"
    assert summary["fail"] == summary["cancelled"] == summary["skipped"] == summary["todo"] == 0, summary
    assert summary["pass"] == summary["tests"], summary
    return summary


def test_the_published_vectors_through_the_core_under_node(project: Path) -> None:
    summary = run_node_tests(
        project,
        "vectors.test.mjs",
        {
            "POKNA_FAIRNESS_DOC": str(ROOT / "docs" / "fairness.md"),
            "POKNA_QUICKNET_ROUNDS": str(ROOT / "tests" / "fixtures" / "drand_quicknet_rounds.json"),
        },
    )
    assert summary["pass"] == 6


def test_a_vector_the_doc_got_wrong_fails_under_node(project: Path, tmp_path: Path) -> None:
    """The run above can fail: one digit of one published f changed, and node says which row."""
    doc = (ROOT / "docs" / "fairness.md").read_text()
    wrong = doc.replace("| 1000000 | 0.37705379631370306 |", "| 1000000 | 0.37705379631370307 |")
    assert wrong != doc
    (tmp_path / "fairness.md").write_text(wrong)
    result = subprocess.run(
        [node_binary(), "--test", "--test-reporter=tap", "vectors.test.mjs"],
        cwd=project,
        env={
            **os.environ,
            "POKNA_FAIRNESS_DOC": str(tmp_path / "fairness.md"),
            "POKNA_QUICKNET_ROUNDS": str(ROOT / "tests" / "fixtures" / "drand_quicknet_rounds.json"),
        },
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode != 0
    assert "# fail 1" in result.stdout
    assert "0.37705379631370307" in result.stdout


# --- real proofs -------------------------------------------------------------------------------------------


@pytest.fixture
def relay() -> Iterator[BeaconRelay]:
    with beacon_relay(period=1, rounds_before_now=5, lifetime_seconds=240) as running:
        yield running


@pytest.fixture(name="settings")
def settings_for_the_relay(tmp_path: Path, database_url: str, relay: BeaconRelay) -> Settings:
    return beacon_settings(tmp_path, database_url, relay, chain_file_of(tmp_path, relay))


def expected(report: VerificationReport) -> dict[str, Any]:
    """What the Python verifier says: every check's status in order, the verdict, its failures' words."""
    failed = [check for check in report.checks if check.status is CheckStatus.FAIL]
    not_run = [check for check in report.checks if check.status is CheckStatus.NOT_RUN]
    return {
        "checks": [[check.name, check.status.value] for check in report.checks],
        "state": "invalid" if failed else "partial" if not_run else "valid",
        "messages": {check.name: check.message for check in failed if check.name not in OWN_WORDS},
    }


def case(
    name: str,
    document: dict[str, Any],
    keys: dict[str, Any],
    *,
    receipt: dict[str, Any] | None = None,
    chain: BeaconChain | None = None,
    chain_info: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One document for the core, with what Python made of it (a link is judged with the receipt it carries)."""
    is_link = document.get("object") == "fairness_link"
    proof = document["proof"] if is_link else document
    report = verify_proof(
        proof,
        KeyRing.from_json(keys),
        replay=replay_proof,
        receipt=receipt if receipt is not None else document["commitment"] if is_link else None,
        beacon_chains=(QUICKNET, chain) if chain is not None else (QUICKNET,),
    )
    return {
        "name": name,
        "document": document,
        "keyRing": keys,
        "receipt": receipt,
        "beaconChainInfos": [chain_info] if chain_info is not None else [],
        "expected": expected(report),
    }


def _played(
    api: Api, client: TestClient, players: int, policy: Policy = obliging, **terms: Any
) -> dict[str, Any]:
    vigo, *seated = (api.wallet(1_000) for _ in range(players + 1))
    game: Game = api.create_game(vigo, seated, stake=10, **terms)
    receipt = game["fairness"]["commitment"]
    game = play([api], game, policy)
    link: dict[str, Any] = client.get(game["fairness"]["public_url"]).json()
    assert link["revealed"] is True, link
    return {"game": game, "receipt": receipt, "link": link, "proof": api.proof(game["id"])}


def _resigned(
    proof: dict[str, Any], runtime: Runtime, edit: Callable[[dict[str, Any]], None]
) -> dict[str, Any]:
    """A forgery the operator could make: the proof edited, then signed again with its own key."""
    forged = copy.deepcopy(proof)
    edit(forged)
    return sign_document(forged, runtime.keys.signing_key)


def _raise_last_payout(proof: dict[str, Any]) -> None:
    proof["transfers"][-1]["amount"] += 1


def _other_server_seed(proof: dict[str, Any]) -> None:
    proof["server_seed"] = "0" * 64


def test_real_proofs_and_tampered_copies_through_the_core_under_node(
    project: Path,
    tmp_path: Path,
    client: TestClient,
    sessions: sessionmaker[Session],
    runtime: Runtime,
    relay: BeaconRelay,
) -> None:
    api = Api(client, new_tenant_key(sessions))
    keys: dict[str, Any] = client.get("/v1/fairness/keys").json()
    stake_games = [
        _played(api, client, 2),
        *(
            _played(api, client, 3, random_policy(random.Random(seed), cancel_chance=0.2))
            for seed in range(4)
        ),
    ]
    beacon = _played(api, client, 2, fairness_mode="beacon")
    assert beacon["proof"]["fairness_mode"] == "beacon"
    info = relay.info()
    first = stake_games[0]
    proof = first["proof"]
    edited_face = copy.deepcopy(proof)
    edited_face["rolls"][1]["face"] = edited_face["rolls"][1]["face"] % 6 + 1
    swapped_round = copy.deepcopy(beacon["proof"])
    swapped_round["rolls"][-1]["beacon"] = relay.key.sign(
        swapped_round["rolls"][-1]["beacon"]["round"] - 1
    ).to_json()
    promised_more = {**first["receipt"], "game": {**first["receipt"]["game"], "stake": 11}}

    cases = [
        *(
            case(f"stake game {index}: its public link", game["link"], keys)
            for index, game in enumerate(stake_games)
        ),
        case(
            "stake game: the bare proof with the receipt kept from creation",
            proof,
            keys,
            receipt=first["receipt"],
        ),
        case("stake game: the bare proof without a receipt", proof, keys),
        case(
            "beacon game: its public link, the relay's chain trusted",
            beacon["link"],
            keys,
            chain=relay.chain,
            chain_info=info,
        ),
        case("beacon game: its public link, only quicknet trusted", beacon["link"], keys),
        case("tampered: a face edited, not signed again", edited_face, keys, receipt=first["receipt"]),
        case(
            "tampered: a payout raised and signed again with the operator's key",
            _resigned(proof, runtime, _raise_last_payout),
            keys,
            receipt=first["receipt"],
        ),
        case(
            "tampered: another server seed, signed again",
            _resigned(proof, runtime, _other_server_seed),
            keys,
            receipt=first["receipt"],
        ),
        case(
            "tampered: signed by a key the ring does not hold",
            sign_document(proof, STRANGER_KEY),
            keys,
            receipt=first["receipt"],
        ),
        case("tampered: the receipt promises another stake", proof, keys, receipt=promised_more),
        case(
            "tampered: a beacon round swapped for the one before, signed again",
            sign_document(swapped_round, runtime.keys.signing_key),
            keys,
            receipt=beacon["receipt"],
            chain=relay.chain,
            chain_info=info,
        ),
    ]
    malformed = {key: value for key, value in proof.items() if key != "rolls"}
    with pytest.raises(MalformedProofError) as raised:
        verify_proof(malformed, KeyRing.from_json(keys))
    cases.append(
        {
            "name": "malformed: the rolls missing",
            "document": malformed,
            "keyRing": keys,
            "receipt": None,
            "beaconChainInfos": [],
            "expected": {
                "checks": [["shape", "fail"], *([name, "not run"] for name in CHECKS)],
                "state": "invalid",
                "messages": {"shape": str(raised.value)},
            },
        }
    )

    verdicts = [item["expected"]["state"] for item in cases]
    assert verdicts.count("valid") >= 7  # every link, both modes, and the proof with its receipt
    assert verdicts.count("invalid") == 8  # the untrusted chain, six tampered copies and the malformed one
    assert "partial" in verdicts
    failed = {name for item in cases for name, status in item["expected"]["checks"] if status == "fail"}
    assert {"commitment", "rolls", "beacon", "signature", "receipt", "replay", "shape"} <= failed

    cases_file = tmp_path / "cases.json"
    cases_file.write_text(json.dumps({"cases": cases}))
    summary = run_node_tests(project, "proofs.test.mjs", {"POKNA_PROOF_CASES": str(cases_file)})
    assert summary["pass"] == len(cases)


# --- the package ---------------------------------------------------------------------------------------------


def test_the_core_is_small_modules_and_its_package_is_the_verifiers_version() -> None:
    modules = sorted(CORE.glob("*.js"))
    page = sorted((ROOT / "service" / "pokna" / "static").rglob("*.js"))
    long = {
        file.relative_to(ROOT).as_posix(): lines
        for file in [*modules, *page]
        if file.name != VENDORED and (lines := len(file.read_text().splitlines())) > MAX_LINES
    }
    assert not long, f"split these by meaning: {long}"
    package = json.loads((CORE / "package.json").read_text())
    assert (package["name"], package["type"], package["exports"]) == (
        "pokna-verify",
        "module",
        {".": "./index.js"},
    )
    version = re.search(r'^version = "([^"]+)"$', (ROOT / "verifier" / "pyproject.toml").read_text(), re.M)
    assert version is not None
    assert package["version"] == version.group(1)


def test_the_verifiers_build_carries_the_core(tmp_path: Path) -> None:
    """setuptools lays out pokna-verify as its wheel holds it (build_py, from the pyproject's package data;
    no download): the core and its package.json are there, where the service and Node look for them.
    (tests/verifier installs the wheel itself.)"""
    source = tmp_path / "verifier"
    shutil.copytree(
        ROOT / "verifier", source, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build")
    )
    built = subprocess.run(
        [
            sys.executable,
            "-c",
            "from setuptools import setup; setup()",
            "-q",
            "build_py",
            "--build-lib",
            "out",
        ],
        cwd=source,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert built.returncode == 0, built.stderr[-4000:]
    inside = {file.name for file in (source / "out" / "pokna_verify" / "js").iterdir()}
    shipped = {file.name for file in CORE.iterdir() if file.suffix in (".js", ".json")}
    assert inside == shipped
    assert {"package.json", "index.js", VENDORED} <= inside
