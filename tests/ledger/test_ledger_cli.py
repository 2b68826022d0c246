"""`pokna ledger export|reconcile|checkpoint` against a real database, and `pokna audit verify` offline."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker
from typer.testing import CliRunner

import pokna.cli.ledger  # noqa: F401  (registers `ledger` and `audit`)
from pokna.cli.app import app
from pokna.service_keys import load_service_keys
from pokna.settings import Settings, get_settings
from pokna_verify.crypto.signing import generate_signing_key, public_key_to_b64url, public_key_to_pem
from support.lock_waits import wait_for_a_statement_waiting_on_a_lock
from support.tenant_api import TenantApi
from support.verify_cli import VerifyCli

pytest_plugins = ["ledger_fixtures"]
# One chain, as the journal was before chains: these read chain 0's seqs (several chains:
# tests/ledger/test_ledger_export_chains.py, tests/audit/test_audit_bundle_chains.py).
pytestmark = pytest.mark.usefixtures("on_chain_zero")

runner = CliRunner()


@pytest.fixture
def cli_env(database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    data_dir = tmp_path / "data"
    monkeypatch.setenv("POKNA_DATABASE_URL", database_url)
    monkeypatch.setenv("POKNA_DATA_DIR", str(data_dir))
    monkeypatch.setenv("POKNA_ENV", "test")
    get_settings.cache_clear()
    yield data_dir
    get_settings.cache_clear()


@pytest.fixture
def tenant_id(tenant_api: TenantApi) -> str:
    return tenant_api.tenant_id


@pytest.fixture
def funded(tenant_api: TenantApi) -> str:
    """A wallet with a deposit and two withdrawals, over HTTP."""
    wallet = tenant_api.wallet(external_id="jawa")
    for move, amount in ((tenant_api.deposit, 90), (tenant_api.withdraw, 15), (tenant_api.withdraw, 5)):
        assert move(wallet, amount).status_code == 201
    return wallet


def _export(tenant_id: str, path: Path, *extra: str) -> None:
    result = runner.invoke(app, ["ledger", "export", "--tenant", tenant_id, "-o", str(path), *extra])
    assert result.exit_code == 0, result.output


def test_export_then_verify_offline(
    verify_cli: VerifyCli, cli_env: Path, tenant_id: str, funded: str, tmp_path: Path
) -> None:
    export = tmp_path / "ledger.jsonl"
    _export(tenant_id, export)
    assert len(export.read_text().splitlines()) == 3
    result = verify_cli("audit", "verify", str(export))
    assert result.exit_code == 0, result.output
    assert "VALID" in result.output
    assert "seq 1-3, 3 transactions, 6 postings" in result.output
    as_json = verify_cli("audit", "verify", str(export), "--json")
    report = json.loads(as_json.output)
    assert report["valid"] is True
    assert report["balances"][funded] == 70
    assert report["trial_balance"] == {"CREDIT": 0}


def test_verify_names_the_tampered_seq_and_exits_1(
    verify_cli: VerifyCli, cli_env: Path, tenant_id: str, funded: str, tmp_path: Path
) -> None:
    export = tmp_path / "ledger.jsonl"
    _export(tenant_id, export)
    lines = export.read_text().splitlines(keepends=True)
    export.write_text(lines[0] + lines[2])
    result = verify_cli("audit", "verify", str(export), "--json")
    assert result.exit_code == 1
    findings = json.loads(result.output)["findings"]
    assert 2 in {finding["seq"] for finding in findings}


def test_unusable_input_exits_2(verify_cli: VerifyCli, cli_env: Path, tmp_path: Path) -> None:
    missing = verify_cli("audit", "verify", str(tmp_path / "nope.jsonl"))
    assert missing.exit_code == 2
    export = tmp_path / "empty.jsonl"
    export.write_text("")
    (tmp_path / "checkpoint.json").write_text("[1, 2]")
    (tmp_path / "key.pem").write_text("not a key")
    bad_checkpoint = verify_cli(
        "audit", "verify", str(export), "--checkpoint", str(tmp_path / "checkpoint.json")
    )
    assert bad_checkpoint.exit_code == 2
    (tmp_path / "checkpoint.json").write_text('{"type": "something else"}')
    assert (
        verify_cli(
            "audit", "verify", str(export), "--checkpoint", str(tmp_path / "checkpoint.json")
        ).exit_code
        == 2
    )
    key_without_checkpoint = verify_cli(
        "audit", "verify", str(export), "--public-key", str(tmp_path / "key.pem")
    )
    assert key_without_checkpoint.exit_code == 2


def test_checkpoint_signs_the_head_and_verify_checks_it(
    verify_cli: VerifyCli,
    cli_env: Path,
    sessions: sessionmaker[Session],
    tenant_id: str,
    funded: str,
    tmp_path: Path,
) -> None:
    checkpoint = tmp_path / "checkpoint.json"
    result = runner.invoke(app, ["ledger", "checkpoint", "--tenant", tenant_id, "-o", str(checkpoint)])
    assert result.exit_code == 0, result.output
    document = json.loads(checkpoint.read_text())
    assert (document["tenant_id"], document["seq"]) == (tenant_id, 3)
    public_key = load_service_keys(Settings()).signing_key.public_key()
    pem = tmp_path / "service.pem"
    pem.write_bytes(public_key_to_pem(public_key))
    raw = tmp_path / "service.b64"
    raw.write_text(public_key_to_b64url(public_key))
    export = tmp_path / "ledger.jsonl"
    _export(tenant_id, export)
    for key in (pem, raw):
        ok = verify_cli(
            "audit", "verify", str(export), "--checkpoint", str(checkpoint), "--public-key", str(key)
        )
        assert ok.exit_code == 0, ok.output
        assert "checkpoint     checked" in ok.output
    short = tmp_path / "short.jsonl"
    _export(tenant_id, short, "--chain", "0", "--to-seq", "2")
    truncated = verify_cli(
        "audit", "verify", str(short), "--checkpoint", str(checkpoint), "--public-key", str(pem)
    )
    assert truncated.exit_code == 1
    assert "export ends at seq 2" in truncated.output
    stranger = tmp_path / "stranger.pem"
    stranger.write_bytes(public_key_to_pem(generate_signing_key().public_key()))
    forged = verify_cli(
        "audit", "verify", str(export), "--checkpoint", str(checkpoint), "--public-key", str(stranger)
    )
    assert forged.exit_code == 1
    # Asked to check a checkpoint, given no key: its heads were checked, not who signed it (anyone can write
    # one). Not a pass: exit 4, partly verified, as a proof without keys.
    unsigned = verify_cli("audit", "verify", str(export), "--checkpoint", str(checkpoint))
    assert unsigned.exit_code == 4, unsigned.output
    assert "PARTLY VERIFIED" in unsigned.output
    assert "the checkpoint's signature was not checked" in unsigned.output
    as_json = verify_cli("audit", "verify", str(export), "--checkpoint", str(checkpoint), "--json")
    assert as_json.exit_code == 4, as_json.output
    report = json.loads(as_json.output)
    assert (report["valid"], report["verdict"]) == (None, "partly_verified"), report


def test_other_formats_and_reconcile(cli_env: Path, tenant_id: str, funded: str, tmp_path: Path) -> None:
    csv_file = tmp_path / "ledger.csv"
    _export(tenant_id, csv_file, "--format", "csv")
    assert len(csv_file.read_text().splitlines()) == 1 + 6
    bean = tmp_path / "ledger.beancount"
    _export(tenant_id, bean, "--format", "beancount", "--chain", "0", "--from-seq", "2")
    assert "opening balances before seq 2" in bean.read_text()
    stdout = runner.invoke(
        app, ["ledger", "export", "--tenant", tenant_id, "--chain", "0", "--from-seq", "3"]
    )
    assert stdout.exit_code == 0
    assert json.loads(stdout.output)["seq"] == 3
    assert runner.invoke(app, ["ledger", "export", "--tenant", tenant_id, "--format", "xml"]).exit_code == 2
    reconciled = runner.invoke(app, ["ledger", "reconcile"])
    assert reconciled.exit_code == 0, reconciled.output
    assert "chains intact" in reconciled.output


def test_an_output_of_dash_is_stdout_as_the_verifiers_read_it(
    cli_env: Path, tenant_id: str, funded: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["ledger", "export", "--tenant", tenant_id, "-o", "-"])
    assert result.exit_code == 0, result.output
    assert len(result.stdout.splitlines()) == 3
    assert not (tmp_path / "-").exists()


def test_an_interrupted_export_leaves_no_file_to_pass_for_a_whole_one(
    cli_env: Path, sessions: sessionmaker[Session], tenant_id: str, funded: str, tmp_path: Path
) -> None:
    """Ctrl-C while the export waits for the journal's heads (held locked here); a journal's prefix
    verifies, so a file left behind, empty or half-written, could pass for the whole export. The command
    says it was interrupted, one line, and exits 130 (128 + SIGINT, as a shell reports it)."""
    export = tmp_path / "ledger.jsonl"
    pokna = str(Path(sys.executable).with_name("pokna"))
    with sessions() as holding:
        holding.execute(text("LOCK TABLE ledger_head IN ACCESS EXCLUSIVE MODE"))
        process = subprocess.Popen(
            [pokna, "ledger", "export", "--tenant", tenant_id, "-o", str(export)],
            env=dict(os.environ),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            wait_for_a_statement_waiting_on_a_lock(sessions, "SELECT chain, last_seq FROM ledger_head")
            process.send_signal(signal.SIGINT)
            _, errors = process.communicate(timeout=60)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=30)
        holding.rollback()
    # Interrupted, said in one line (issue: it ended with 130 and nothing on stderr), no traceback.
    assert (process.returncode, errors) == (130, b"error: interrupted\n")
    assert not export.exists()
    assert not [path for path in tmp_path.iterdir() if path.name.startswith(".ledger.jsonl")]


def test_an_export_to_a_full_disk_names_the_file(cli_env: Path, tenant_id: str, funded: str) -> None:
    """A write error (ENOSPC) is no bug in pokna: one line naming the file and the OS's reason, exit 1."""
    for command in (["export", "--tenant", tenant_id], ["checkpoint", "--tenant", tenant_id]):
        full = runner.invoke(app, ["ledger", *command, "-o", "/dev/full"])
        assert full.exit_code == 1, full.output
        assert "error: cannot write /dev/full: No space left on device" in full.output, full.output
        assert "unexpected" not in full.output


def test_an_export_cut_by_a_full_disk_leaves_no_file(
    cli_env: Path, tenant_id: str, funded: str, tmp_path: Path
) -> None:
    """A file-size limit stands in for a disk that fills half-way: the write fails after LIMIT bytes.
    Nothing is left at -o, nor its partial file beside it."""
    out = tmp_path / "out"
    out.mkdir()
    limit = 200

    def small_disk() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    pokna = str(Path(sys.executable).with_name("pokna"))
    ran = subprocess.run(
        [pokna, "ledger", "export", "--tenant", tenant_id, "-o", str(out / "ledger.jsonl")],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=small_disk,
    )
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert f"error: cannot write {out / 'ledger.jsonl'}: File too large" in ran.stderr, ran.stderr
    assert "unexpected" not in ran.stderr
    assert list(out.iterdir()) == []


def test_an_export_to_a_full_standard_output_says_so(cli_env: Path, tenant_id: str, funded: str) -> None:
    """`pokna ledger export > /dev/full`: the same one line, naming standard output, and no second complaint
    from the interpreter's last flush at exit."""
    pokna = str(Path(sys.executable).with_name("pokna"))
    with open("/dev/full", "w") as full:
        ran = subprocess.run(
            [pokna, "ledger", "export", "--tenant", tenant_id],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    assert ran.returncode == 1, ran.stderr
    assert ran.stderr == "error: cannot write standard output: No space left on device\n", ran.stderr
