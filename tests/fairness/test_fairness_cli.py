"""`pokna roll` through typer's CliRunner, and `pokna verify` through it and through `pokna-verify proof`
(the `verify_cli` fixture): output and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fairness_samples import CHECK_SERVER_SEED, KEY_RING, NEW_KEY, OLD_KEY, sample_proof, sample_receipt
from typer.testing import CliRunner

import pokna.cli.roll
import pokna.cli.verify  # noqa: F401  (registers verify on the app)
from pokna.cli.app import app
from pokna_verify.cli import proof_report
from pokna_verify.crypto.signing import (
    private_key_to_pem,
    public_key_to_b64url,
    public_key_to_pem,
    sign_document,
)
from pokna_verify.fairness.proof import Proof
from support.verify_cli import VerifyCli

runner = CliRunner()


@pytest.fixture
def proof_file(tmp_path: Path) -> Path:
    path = tmp_path / "proof.json"
    path.write_text(json.dumps(sample_proof()))
    return path


@pytest.fixture
def keys_file(tmp_path: Path) -> Path:
    path = tmp_path / "keys.json"
    path.write_text(json.dumps(KEY_RING.to_json()))
    return path


@pytest.fixture
def receipt_file(tmp_path: Path) -> Path:
    path = tmp_path / "receipt.json"
    path.write_text(json.dumps(sample_receipt()))
    return path


def test_roll_prints_the_check_vector() -> None:
    result = runner.invoke(
        app, ["roll", "--server-seed", CHECK_SERVER_SEED, "--client-seed", "pokna-client", "--nonce", "0"]
    )
    assert result.exit_code == 0, result.output
    assert "f                 0.2409662576392293" in result.output
    assert "face              2" in result.output
    assert "colour            red" in result.output
    assert "861e71aae3914702057bf23c67148ff7bf08956965cd1b6f3d48792fa5875587" in result.output


def test_roll_json() -> None:
    args = [
        "roll",
        "--server-seed",
        CHECK_SERVER_SEED,
        "--client-seed",
        "pokna-client",
        "--nonce",
        "256",
        "--json",
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert (document["f"], document["face"], document["color"], document["nonce"]) == (
        0.3093701181933284,
        2,
        "red",
        256,
    )


def test_roll_refuses_a_malformed_seed_and_a_negative_nonce() -> None:
    result = runner.invoke(app, ["roll", "--server-seed", "ABC", "--client-seed", "c", "--nonce", "0"])
    assert result.exit_code == 2
    assert "64 lowercase hexadecimal" in result.output
    result = runner.invoke(
        app, ["roll", "--server-seed", CHECK_SERVER_SEED, "--client-seed", "c", "--nonce", "-1"]
    )
    assert result.exit_code == 2


def test_verify_with_keys_but_no_receipt_is_partly_verified(
    verify_cli: VerifyCli, proof_file: Path, keys_file: Path
) -> None:
    result = verify_cli("verify", str(proof_file), "--keys", str(keys_file))
    assert result.exit_code == 4, result.output
    assert "Proof of game game-0001" in result.output
    assert "PASS     rolls" in result.output
    assert "PASS     replay" in result.output
    assert result.output.splitlines()[-1] == (
        "PARTLY VERIFIED: nothing failed, but not every check ran: receipt (no commitment receipt given: "
        "pass --receipt FILE or verify the game's public link)"
    )


def test_verify_valid_with_pem_or_raw_public_key(
    verify_cli: VerifyCli, tmp_path: Path, proof_file: Path, receipt_file: Path
) -> None:
    given = ["--receipt", str(receipt_file)]
    pem = tmp_path / "key.pem"
    pem.write_bytes(public_key_to_pem(NEW_KEY.public_key()))
    assert verify_cli("verify", str(proof_file), "--public-key", str(pem), *given).exit_code == 0
    raw = tmp_path / "key.txt"
    raw.write_text(public_key_to_b64url(NEW_KEY.public_key()) + "\n")
    assert verify_cli("verify", str(proof_file), "--public-key", str(raw), *given).exit_code == 0
    wrong = tmp_path / "old.pem"
    wrong.write_bytes(private_key_to_pem(OLD_KEY))  # a private key PEM is accepted; its public half is used
    result = verify_cli("verify", str(proof_file), "--public-key", str(wrong))
    assert result.exit_code == 1
    assert "INVALID: failed checks: signature" in result.output


def test_verify_without_keys_runs_the_rest_and_is_not_a_pass(
    verify_cli: VerifyCli, proof_file: Path, receipt_file: Path
) -> None:
    """A script that trusts the exit code must not accept a proof whose signature nobody checked."""
    for given in ([], ["--receipt", str(receipt_file)]):
        result = verify_cli("verify", str(proof_file), *given)
        assert result.exit_code == 4, result.output
        assert "NOT RUN  signature" in result.output
        assert result.output.splitlines()[-1].startswith(
            "PARTLY VERIFIED: nothing failed, but not every check ran: signature (no key ring"
        )
        report = json.loads(verify_cli("verify", str(proof_file), *given, "--json").output)
        assert (report["verdict"], report["valid"], report["every_check_ran"]) == (
            "partly_verified",
            None,
            False,
        )


def test_verify_help_names_every_exit_code(verify_cli: VerifyCli) -> None:
    shown = " ".join(verify_cli("verify", "--help").output.split())
    for said in ("0 valid", "1 invalid", "2 unusable input", "3 not revealed yet", "4 partly verified"):
        assert said in shown


def test_verify_with_receipt(
    verify_cli: VerifyCli, tmp_path: Path, proof_file: Path, keys_file: Path
) -> None:
    receipt = tmp_path / "receipt.json"
    receipt.write_text(json.dumps(sample_receipt()))
    result = verify_cli("verify", str(proof_file), "--keys", str(keys_file), "--receipt", str(receipt))
    assert result.exit_code == 0, result.output
    assert "PASS     receipt" in result.output


def test_verify_invalid_names_the_failed_check(
    verify_cli: VerifyCli, tmp_path: Path, keys_file: Path
) -> None:
    proof = sample_proof()
    recorded = proof["rolls"][3]["face"]
    proof["rolls"][3]["face"] = recorded % 6 + 1
    path = tmp_path / "forged.json"
    path.write_text(json.dumps(sign_document(proof, NEW_KEY)))
    result = verify_cli("verify", str(path), "--keys", str(keys_file))
    assert result.exit_code == 1
    assert f"roll nonce 3: face {recorded % 6 + 1} recorded, {recorded} computed" in result.output
    assert "INVALID: failed checks: rolls" in result.output


def test_verify_json(verify_cli: VerifyCli, tmp_path: Path, keys_file: Path) -> None:
    proof = sample_proof()
    proof["outcome"]["reason"] = "claimed"
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(proof))
    result = verify_cli("verify", str(path), "--keys", str(keys_file), "--json")
    assert result.exit_code == 1
    report = json.loads(result.output)
    assert report["valid"] is False
    assert [check["name"] for check in report["checks"] if check["status"] == "fail"] == [
        "signature",
        "replay",
    ]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot read the proof file"),
        ("{not json", "is not JSON"),
        ("[1, 2]", "not an object"),
        ('{"protocol": "pokna-hmac-sha256-v1"}', "$.document: missing"),
    ],
)
def test_verify_unusable_input_exits_2(
    verify_cli: VerifyCli, tmp_path: Path, content: str | None, message: str
) -> None:
    path = tmp_path / "proof.json"
    if content is not None:
        path.write_text(content)
    result = verify_cli("verify", str(path))
    assert result.exit_code == 2
    assert message in result.output
    result = verify_cli("verify", str(path), "--json")
    assert result.exit_code == 2
    assert message in json.loads(result.output)["error"]


def test_verify_unusable_keys_exit_2(
    verify_cli: VerifyCli, tmp_path: Path, proof_file: Path, keys_file: Path
) -> None:
    bad = tmp_path / "bad.pem"
    bad.write_text("not a key")
    assert verify_cli("verify", str(proof_file), "--public-key", str(bad)).exit_code == 2
    assert verify_cli("verify", str(proof_file), "--public-key", str(tmp_path / "none.pem")).exit_code == 2
    both = verify_cli("verify", str(proof_file), "--keys", str(keys_file), "--public-key", str(bad))
    assert both.exit_code == 2
    assert "not both" in both.output


def test_the_replay_hook_is_used(
    verify_cli: VerifyCli, monkeypatch: pytest.MonkeyPatch, proof_file: Path, keys_file: Path
) -> None:
    def disagreeing(proof: Proof) -> str | None:
        return "outcome: winners [1] recorded, [2] replayed"

    monkeypatch.setattr(proof_report, "replay_proof", disagreeing)
    result = verify_cli("verify", str(proof_file), "--keys", str(keys_file))
    assert result.exit_code == 1
    assert "FAIL     replay              outcome: winners [1] recorded, [2] replayed" in result.output


def test_the_installed_pokna_command_has_roll_and_verify() -> None:
    """`pokna.cli.main` finds each command through `pokna.cli.app.COMMANDS` (imported when it runs)."""
    import subprocess
    import sys

    pokna = Path(sys.executable).with_name("pokna")
    for command in ("roll", "verify"):
        shown = subprocess.run([str(pokna), command, "--help"], capture_output=True, text=True, check=False)
        assert shown.returncode == 0, (
            f"pokna.cli.app.COMMANDS must name pokna.cli.roll and pokna.cli.verify: {shown.stderr}"
        )
        assert shown.stdout.startswith(f"Usage: pokna {command} "), shown.stdout


def test_verify_fetches_the_key_ring_from_a_url(
    verify_cli: VerifyCli, proof_file: Path, keys_file: Path, receipt_file: Path
) -> None:
    import http.server
    import threading

    body = keys_file.read_bytes()

    class KeysHandler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            return

    server = http.server.HTTPServer(("127.0.0.1", 0), KeysHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1/fairness/keys"
        result = verify_cli("verify", str(proof_file), "--keys", url, "--receipt", str(receipt_file))
        unreachable = verify_cli("verify", str(proof_file), "--keys", "http://127.0.0.1:1/keys")
    finally:
        server.shutdown()
        thread.join(timeout=5)
    assert result.exit_code == 0, result.output
    assert "PASS     signature" in result.output
    assert unreachable.exit_code == 2
