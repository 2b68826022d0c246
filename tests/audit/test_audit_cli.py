"""`pokna audit bundle` and `pokna audit verify` against a real database: the bundle from
the command verifies, --keys and --public-key take what /v1/fairness/keys publishes, mistakes are errors."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker
from typer.testing import CliRunner

import pokna.cli.ledger  # noqa: F401  (registers `ledger` and `audit`)
import pokna_verify.cli.progress  # its clock is moved below
from pokna.cli.app import app
from pokna.service_keys import load_service_keys
from pokna.settings import Settings, get_settings
from pokna_verify.crypto.signing import public_key_to_b64url
from pokna_verify.ledger.chain import chain_for
from support.tenant_api import TenantApi, new_tenant
from support.verify_cli import VerifyCli

runner = CliRunner()


@pytest.fixture
def cli_env(database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("POKNA_DATABASE_URL", database_url)
    monkeypatch.setenv("POKNA_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("POKNA_ENV", "test")
    get_settings.cache_clear()
    yield tmp_path
    get_settings.cache_clear()


@pytest.fixture
def tenant_api(client: TestClient, sessions: sessionmaker[Session]) -> TenantApi:
    return new_tenant(client, sessions, "Mos Eisley")


@pytest.fixture
def tenant_id(tenant_api: TenantApi) -> str:
    return tenant_api.tenant_id


@pytest.fixture
def funded(cli_env: Path, tenant_api: TenantApi) -> str:
    """A wallet with a deposit and a withdrawal, over HTTP."""
    wallet = tenant_api.wallet(90)
    assert tenant_api.withdraw(wallet, 15).status_code == 201
    return wallet


def test_the_bundle_command_writes_what_verify_accepts(
    verify_cli: VerifyCli, cli_env: Path, tenant_id: str, funded: str
) -> None:
    bundle, keys = cli_env / "bundle.jsonl", cli_env / "keys.json"
    written = runner.invoke(app, ["audit", "bundle", "--tenant", tenant_id, "-o", str(bundle)])
    assert written.exit_code == 0, written.output
    keys.write_text(json.dumps(load_service_keys(Settings()).key_ring.to_json()))
    checked = verify_cli("audit", "verify", str(bundle), "--keys", str(keys), "--progress", "--json")
    assert checked.exit_code == 0, checked.output
    report = json.loads(checked.stdout)
    assert report["verdict"] == "valid"
    assert report["transaction_kinds"] == {"deposit": 1, "withdrawal": 1}
    assert report["account_kinds"]["player_wallet"] == {"CREDIT": 75}
    assert report["account_kinds"]["external_funding"] == {"CREDIT": -75}

    # Without --keys it still checks, against the bundle's own ring, and says so.
    unpinned = verify_cli("audit", "verify", str(bundle))
    assert unpinned.exit_code == 0, unpinned.output
    assert "key ring inside the bundle" in unpinned.output

    tail = runner.invoke(app, ["audit", "bundle", "--tenant", tenant_id, "--chain", "0", "--from-seq", "2"])
    assert tail.exit_code == 0, tail.output
    ambiguous = runner.invoke(app, ["audit", "bundle", "--tenant", tenant_id, "--from-seq", "2"])
    assert ambiguous.exit_code == 2
    assert ambiguous.output.startswith("error: --chain: from_seq and to_seq are positions on one chain")
    assert json.loads(tail.stdout.splitlines()[0])["from_seq"] == 2
    backwards = runner.invoke(
        app, ["audit", "bundle", "--tenant", tenant_id, "--from-seq", "3", "--to-seq", "1"]
    )
    assert backwards.exit_code == 2
    assert "--to-seq" in backwards.output

    # One chain: the wallet's, where its deposit and withdrawals are.
    chain = chain_for(funded)
    alone = runner.invoke(app, ["audit", "bundle", "--tenant", tenant_id, "--chain", str(chain)])
    assert alone.exit_code == 0, alone.output
    header = json.loads(alone.stdout.splitlines()[0])
    assert [(entry["chain"], entry["from_seq"], entry["to_seq"]) for entry in header["chains"]] == [
        (chain, 1, 2)
    ]
    for wrong in ("16", "-1"):
        refused = runner.invoke(app, ["audit", "bundle", "--tenant", tenant_id, "--chain", wrong])
        assert refused.exit_code == 2
        assert "--chain" in refused.output


def test_unknown_tenants_are_errors_naming_them(cli_env: Path, tenant_id: str) -> None:
    for argv in (["ledger", "export", "--tenant", "ten_nope"], ["audit", "bundle", "--tenant", "ten_nope"]):
        result = runner.invoke(app, argv)
        assert result.exit_code == 2, result.output
        assert "no tenant 'ten_nope'" in result.output


def test_an_empty_export_or_bundle_is_not_valid(verify_cli: VerifyCli, cli_env: Path, tenant_id: str) -> None:
    export, bundle = cli_env / "empty.jsonl", cli_env / "empty-bundle.jsonl"
    assert runner.invoke(app, ["ledger", "export", "--tenant", tenant_id, "-o", str(export)]).exit_code == 0
    assert runner.invoke(app, ["audit", "bundle", "--tenant", tenant_id, "-o", str(bundle)]).exit_code == 0
    for path in (export, bundle):
        result = verify_cli("audit", "verify", str(path))
        assert result.exit_code == 2, result.output
        assert "nothing to verify" in result.output


def test_checkpoints_are_checked_with_the_published_keys_or_the_key_text(
    verify_cli: VerifyCli, cli_env: Path, tenant_id: str, funded: str
) -> None:
    export, checkpoint, keys = cli_env / "ledger.jsonl", cli_env / "checkpoint.json", cli_env / "keys.json"
    assert runner.invoke(app, ["ledger", "export", "--tenant", tenant_id, "-o", str(export)]).exit_code == 0
    assert (
        runner.invoke(app, ["ledger", "checkpoint", "--tenant", tenant_id, "-o", str(checkpoint)]).exit_code
        == 0
    )
    service_keys = load_service_keys(Settings())
    keys.write_text(json.dumps(service_keys.key_ring.to_json()))
    text = public_key_to_b64url(service_keys.signing_key.public_key())
    # One key in 64 begins with "-": argparse took it for an option (this test failed that way now and then).
    dashed = public_key_to_b64url(_key_whose_text_begins_with_a_dash().public_key())
    assert dashed.startswith("-")
    dashed_result = verify_cli(
        "audit", "verify", str(export), "--checkpoint", str(checkpoint), "--public-key", dashed
    )
    assert dashed_result.exit_code == 1, (
        dashed_result.output
    )  # read as a key (the wrong one), not a usage error
    for option in (["--keys", str(keys)], ["--public-key", text]):
        result = verify_cli("audit", "verify", str(export), "--checkpoint", str(checkpoint), *option)
        assert result.exit_code == 0, result.output
        assert "checkpoint     checked" in result.output
    garbled = verify_cli(
        "audit", "verify", str(export), "--checkpoint", str(checkpoint), "--public-key", "!!"
    )
    assert garbled.exit_code == 2
    assert "neither a readable file nor a base64url" in garbled.output


def test_long_commands_show_progress_on_stderr_and_quick_or_piped_ones_do_not(
    verify_cli: VerifyCli, cli_env: Path, tenant_id: str, funded: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle, export = cli_env / "bundle.jsonl", cli_env / "export.jsonl"
    commands = {
        "bundle": ["audit", "bundle", "--tenant", tenant_id],
        "export": ["ledger", "export", "--tenant", tenant_id],
    }
    # stderr is not a terminal here: quiet, however long it takes.
    moments = iter(range(0, 10**6, 2))
    monkeypatch.setattr(pokna_verify.cli.progress, "_clock", lambda: next(moments))
    for argv in commands.values():
        quiet = runner.invoke(app, argv)
        assert quiet.exit_code == 0, quiet.output
        assert quiet.stderr == ""
    # Asked for progress (as on a terminal), a command past its first second says how far it has got, on
    # stderr only: stdout stays the file.
    written = runner.invoke(app, [*commands["bundle"], "--progress", "-o", str(bundle)])
    assert written.exit_code == 0, written.output
    assert written.stderr.startswith("\r  ")
    assert "lines" in written.stderr
    assert written.stderr.endswith("MiB written ...\n")
    exported = runner.invoke(app, [*commands["export"], "--progress"])
    assert exported.exit_code == 0, exported.output
    assert [json.loads(line)["seq"] for line in exported.stdout.splitlines()] == [1, 2]
    assert exported.stderr.endswith("2 lines, 0 MiB written ...\n")
    export.write_text(exported.stdout)
    monkeypatch.setattr("pokna_verify.bundle.check._PROGRESS_EVERY", 1)
    for path, says in ((bundle, "records read ...\n"), (export, "MiB read ...\n")):
        checked = verify_cli("audit", "verify", str(path), "--progress", "--json")
        assert checked.exit_code == 0, checked.output
        assert json.loads(checked.stdout)["valid"] is True
        assert checked.stderr.endswith(says)
    # A command done within its first second says nothing, even when asked.
    monkeypatch.setattr(pokna_verify.cli.progress, "_clock", lambda: 0)
    quick = runner.invoke(app, [*commands["export"], "--progress"])
    assert quick.exit_code == 0, quick.output
    assert quick.stderr == ""


def test_log_since_is_refused_on_a_range_and_not_found_before_the_log_signs_it(
    cli_env: Path, tenant_id: str, funded: str
) -> None:
    """`--log-since N` asks for the proof from the previous bundle's log checkpoint of N games: only a
    bundle of the whole books carries the log, and this tenant's log has signed nothing yet."""
    ranged = runner.invoke(
        app, ["audit", "bundle", "--tenant", tenant_id, "--chain", "0", "--log-since", "1"]
    )
    assert ranged.exit_code == 2, ranged.output
    assert "--log-since: only a bundle of the whole books" in ranged.output
    unsigned = runner.invoke(app, ["audit", "bundle", "--tenant", tenant_id, "--log-since", "1"])
    assert unsigned.exit_code == 1, unsigned.output
    assert "public log holds no game yet" in unsigned.output


def _key_whose_text_begins_with_a_dash() -> Ed25519PrivateKey:
    while True:
        key = Ed25519PrivateKey.generate()
        if public_key_to_b64url(key.public_key()).startswith("-"):
            return key
