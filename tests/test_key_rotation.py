"""Rotating the signing key as docs/operations.md says (file the old public key under keys/retired/, configure
a new key, restart): what the old key signed keeps verifying against the published ring, proofs and
receipts through `pokna verify`, ledger checkpoints through `pokna audit verify`."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine
from typer.testing import CliRunner, Result

import pokna.cli  # noqa: F401  (registers every command)
from pokna.app import create_app
from pokna.cli.app import app
from pokna.runtime import Runtime
from pokna.settings import Environment, Settings, get_settings
from pokna_verify.crypto.signing import generate_signing_key, key_id_of, private_key_to_pem
from pokna_verify.fairness.keyring import KeyRing, KeyStatus
from pokna_verify.fairness.seed_vault import generate_vault_key
from support.driver import new_api_key
from support.game_play import Api, play, verify

runner = CliRunner()


@pytest.fixture(autouse=True)
def clean_settings(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in list(os.environ):
        if name.startswith("POKNA_") and not name.startswith("POKNA_TEST_"):
            monkeypatch.delenv(name)
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


class Deployment:
    """One data directory and database, restarted with whichever signing key is configured."""

    def __init__(self, data_dir: Path, database_url: str, monkeypatch: pytest.MonkeyPatch):
        self.data_dir, self.database_url = data_dir, database_url
        self.monkeypatch = monkeypatch
        self.seed_hex = generate_vault_key().hex()

    def configure(self, signing_pem: str) -> Settings:
        """As a restart with a new env file: the CLI's environment and the server's settings agree."""
        values = {
            "POKNA_ENV": "production",
            "POKNA_DATA_DIR": str(self.data_dir),
            "POKNA_DATABASE_URL": self.database_url,
            "POKNA_SIGNING_KEY": signing_pem,
            "POKNA_SEED_ENCRYPTION_KEY": self.seed_hex,
        }
        for name, value in values.items():
            self.monkeypatch.setenv(name, value)
        get_settings.cache_clear()
        settings = Settings()
        assert settings.env is Environment.PRODUCTION
        return settings

    def serve(self, settings: Settings) -> TestClient:
        return TestClient(create_app(settings, Runtime.from_settings(settings)))


def _pem() -> tuple[str, str]:
    key = generate_signing_key()
    return private_key_to_pem(key).decode(), key_id_of(key.public_key())


def _cli(*args: str) -> Result:
    return runner.invoke(app, list(args))


def test_what_the_old_key_signed_still_verifies_after_a_rotation(
    tmp_path: Path, database_url: str, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    deployment = Deployment(tmp_path / "data", database_url, monkeypatch)
    old_pem, old_id = _pem()
    new_pem, new_id = _pem()
    issued = new_api_key(engine, "Mos Eisley")
    api_key = issued.secret

    # Before: a game played to the end, one created (receipt signed) but not played, a signed checkpoint.
    with deployment.serve(deployment.configure(old_pem)) as client:
        api = Api(client, api_key)
        vigo, han = api.wallet(100), api.wallet(100)
        finished = play([api], api.create_game(vigo, [han], stake=5))
        old_proof = api.proof(finished["id"])
        open_game = api.create_game(vigo, [han], stake=3)
        old_ring = api.key_ring()
    assert [key.key_id for key in old_ring.keys] == [old_id]
    checkpoint = _cli(
        "ledger", "checkpoint", "--tenant", issued.tenant_id, "--output", str(tmp_path / "ckpt.json")
    )
    assert checkpoint.exit_code == 0, checkpoint.output
    assert json.loads((tmp_path / "ckpt.json").read_text())["key_id"] == old_id

    # The rotation, step by step: file the old public key as retired, configure the new key, restart.
    retired = deployment.data_dir / "keys" / "retired" / "2026-01.pem"
    filed = _cli("secrets", "public-key", "--output", str(retired))
    assert filed.exit_code == 0, filed.output
    with deployment.serve(deployment.configure(new_pem)) as client:
        api = Api(client, api_key)
        published = client.get("/v1/fairness/keys").json()
        ring = KeyRing.from_json(published)
        assert [(key.key_id, key.status) for key in ring.keys] == [
            (new_id, KeyStatus.CURRENT),
            (old_id, KeyStatus.RETIRED),
        ]
        # The game created before the rotation ends after it: receipt by the old key, proof by the new.
        finished_late = play([api], api.game(open_game["id"]))
        late_proof = api.proof(finished_late["id"])
        assert api.proof(finished["id"]) == old_proof
        export = client.get("/v1/ledger/export", params={"format": "jsonl"}, headers=api.headers)
    assert old_proof["key_id"] == open_game["fairness"]["commitment"]["key_id"] == old_id
    assert late_proof["key_id"] == new_id

    (tmp_path / "keys.json").write_text(json.dumps(published))
    for proof, receipt in (
        (old_proof, finished["fairness"]["commitment"]),
        (late_proof, open_game["fairness"]["commitment"]),
    ):
        assert verify(proof, ring, receipt=receipt).valid
        (tmp_path / "proof.json").write_text(json.dumps(proof))
        (tmp_path / "receipt.json").write_text(json.dumps(receipt))
        checked = _cli(
            "verify", str(tmp_path / "proof.json"), "--receipt", str(tmp_path / "receipt.json"),
            "--keys", str(tmp_path / "keys.json"),
        )  # fmt: skip
        assert checked.exit_code == 0, checked.output

    # The old checkpoint, with the key its key_id names taken from the published ring (the docs' jq line).
    assert export.status_code == 200, export.text
    (tmp_path / "ledger.jsonl").write_bytes(export.content)
    signer = next(key for key in published["keys"] if key["key_id"] == old_id)["public_key"]
    (tmp_path / "signer.key").write_text(signer + "\n")
    audited = _cli(
        "audit", "verify", str(tmp_path / "ledger.jsonl"), "--checkpoint", str(tmp_path / "ckpt.json"),
        "--public-key", str(tmp_path / "signer.key"),
    )  # fmt: skip
    assert audited.exit_code == 0, audited.output
    assert "checkpoint     checked" in audited.output

    # A checkpoint taken now is signed by the new key.
    fresh = _cli("ledger", "checkpoint", "--tenant", issued.tenant_id)
    assert fresh.exit_code == 0, fresh.output
    assert json.loads(fresh.stdout)["key_id"] == new_id


def test_without_the_retired_file_the_old_signatures_do_not_verify(
    tmp_path: Path, database_url: str, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The control for the test above: skipping step 1 of the rotation breaks every old proof."""
    deployment = Deployment(tmp_path / "data", database_url, monkeypatch)
    old_pem, old_id = _pem()
    new_pem, _ = _pem()
    issued = new_api_key(engine, "Mos Eisley")
    api_key = issued.secret
    with deployment.serve(deployment.configure(old_pem)) as client:
        api = Api(client, api_key)
        game = play([api], api.create_game(api.wallet(100), [api.wallet(100)], stake=5))
        proof = api.proof(game["id"])
    checkpoint = _cli("ledger", "checkpoint", "--tenant", issued.tenant_id)
    assert checkpoint.exit_code == 0, checkpoint.output
    (tmp_path / "ckpt.json").write_text(checkpoint.stdout)
    with deployment.serve(deployment.configure(new_pem)) as client:
        api = Api(client, api_key)
        ring = api.key_ring()
        export = client.get("/v1/ledger/export", params={"format": "jsonl"}, headers=api.headers)
    assert ring.find(old_id) is None
    assert not verify(proof, ring, receipt=game["fairness"]["commitment"]).valid

    (tmp_path / "ledger.jsonl").write_bytes(export.content)
    current = ring.current
    assert current is not None
    (tmp_path / "current.key").write_text(current.to_json()["public_key"])
    audited = _cli(
        "audit", "verify", str(tmp_path / "ledger.jsonl"), "--checkpoint", str(tmp_path / "ckpt.json"),
        "--public-key", str(tmp_path / "current.key"),
    )  # fmt: skip
    assert audited.exit_code == 1, audited.output
    assert "checkpoint signature" in audited.output
