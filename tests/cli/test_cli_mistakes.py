"""The mistake matrix: every command and the wrong inputs a user gives it, answered with one line that
names the thing to fix and a documented exit code, and never a traceback.

Exit codes: 2 a usage error (Click's), 1 a failure (`error: ...`), and the offline verifiers' own
UNUSABLE INPUT 2. Every row runs through Typer's CliRunner, which goes through the same `PoknaGroup.main`
as the `pokna` script (a process per row costs a second or more on a shared machine); `serve` rows, and
a sample of every other kind, also run as real processes (`pokna` from the venv, as a user runs it).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pokna.cli.app import app
from pokna.db import embedded
from pokna.service_keys import load_service_keys
from pokna.settings import Environment, Settings, get_settings
from support.servers import free_port

POKNA = Path(sys.executable).with_name("pokna")
SEED = "ab" * 32
UNREACHABLE_PG = "postgresql+psycopg://pokna:secret@127.0.0.1:1/pokna"
SCHEMA_HINT = ("has no Pokna schema", "pokna db upgrade")
NO_TENANT = ("no tenant 'ten_nope'", "pokna tenants list")


@dataclass(frozen=True)
class Mistake:
    argv: tuple[str, ...]
    exit_code: int
    says: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    prefix: str = "error: "

    def __str__(self) -> str:
        settings = " ".join(f"{name}={value[:12]}" for name, value in self.env.items())
        return f"{settings} pokna {' '.join(self.argv)}".strip()[:90]


def usage(*argv: str, says: str) -> Mistake:
    return Mistake(argv, 2, (says, "--help`)"))


def unusable(*argv: str, says: str) -> Mistake:
    return Mistake(argv, 2, (says,), prefix="UNUSABLE INPUT: ")


def unknown_tenant(*argv: str) -> Mistake:
    """A tenant that does not exist is a wrong argument: exit 2, naming it."""
    return Mistake(argv, 2, NO_TENANT)


def unknown_id(*argv: str, says: tuple[str, ...]) -> Mistake:
    """So is any other id that does not exist (an API key, a migration): exit 2, naming it."""
    return Mistake(argv, 2, says)


def failure(*argv: str, says: tuple[str, ...], env: dict[str, str] | None = None) -> Mistake:
    return Mistake(argv, 1, says, env or {})


# Files the rows refer to, made in `files` below: a directory where a file belongs, text that is not
# JSON, JSON that is not an object.
NO_DATABASE = [
    usage("nosuch", says="No such command 'nosuch'"),
    usage("rol", says="Did you mean 'roll'?"),
    usage("--bogus", says="No such option: --bogus"),
    usage("roll", says="Missing option '--server-seed'"),
    usage(
        "roll",
        "--server-seed",
        SEED,
        "--client-seed",
        "c",
        "--nonce",
        "-1",
        says="'--nonce': -1 is not at least 0",
    ),
    usage(
        "roll",
        "--server-seed",
        SEED,
        "--client-seed",
        "c",
        "--nonce",
        "one",
        says="'one' is not a whole number",
    ),
    Mistake(("roll", "--server-seed", "zz", "--client-seed", "c", "--nonce", "0"), 2, ("server seed is 64",)),
    usage("verify", says="Missing argument 'SOURCE'"),
    unusable("verify", "missing.json", says="cannot read the proof file missing.json"),
    unusable("verify", "a-directory", says="cannot read the proof file a-directory"),
    unusable("verify", "not-json.txt", says="not-json.txt is not JSON"),
    unusable("verify", "list.json", says="holds JSON but not an object"),
    unusable(
        "verify",
        "list.json",
        "--public-key",
        "k.pem",
        "--keys",
        "k.json",
        says="--public-key or --keys, not both",
    ),
    unusable("verify", "object.json", says="neither a proof"),
    usage("verify", "object.json", "--frobnicate", says="No such option: --frobnicate"),
    usage("audit", "verify", says="Missing argument 'EXPORT.jsonl|BUNDLE.jsonl'"),
    unusable("audit", "verify", "missing.jsonl", says="cannot read the export missing.jsonl"),
    unusable("audit", "verify", "a-directory", says="cannot read the export a-directory"),
    unusable(
        "audit", "verify", "object.json", "--public-key", "k.pem", says="--public-key checks a --checkpoint"
    ),
    unusable(
        "audit", "verify", "object.json", "--checkpoint", "not-json.txt", says="not-json.txt is not JSON"
    ),
    usage("secrets", "generate", "--format", "yaml", says="'yaml' is not one of 'env', 'compose', 'json'"),
    usage("secrets", "generate", "--output", "object.json", says="object.json exists; refusing to overwrite"),
    usage("secrets", "frobnicate", says="No such command 'frobnicate'"),
    usage("odds", says="Missing option '--players'"),
    usage("odds", "--players", "0", says="a table seats 1 to 11 players besides the Vigo, not 0"),
    usage("odds", "--players", "3", "--stake", "0", says="the stake must be positive, not 0"),
    usage("odds", "--players", "3", "--stake", "lots", says="'lots' is not a whole number"),
    usage("ledger", "export", says="Missing option '--tenant'"),
    usage("ledger", "export", "--tenant", "t", "--format", "xml", says="one of jsonl, csv, beancount"),
    usage("ledger", "export", "--tenant", "t", "--from-seq", "0", says="'--from-seq': 0 is not at least 1"),
    # a range that ends before it starts, refused before any database is asked, as the API refuses it
    failure(
        *["ledger", "export", "--tenant", "t", "--chain", "1", "--from-seq", "5", "--to-seq", "2"],
        says=("to_seq 2 is before from_seq 5",),
    ),
    usage("ledger", "checkpoint", says="Missing option '--tenant'"),
    usage("ledger", "reconcile", "--chain", "yes", says="Got unexpected extra argument(s) (yes)"),
    usage("db", "downgrade", says="Missing argument 'REVISION'"),
    usage("tenants", "create", says="Missing argument 'NAME'"),
    usage("tenants", "keys", "create", says="Missing argument 'TENANT_ID'"),
    usage("tenants", "keys", "revoke", says="Missing argument 'KEY_ID'"),
    usage("serve", "--port", "http", says="'http' is not a whole number"),
    usage("serve", "--port", "70000", says="70000 is not between 1 and 65535"),
    usage("serve", "--workers", "many", says="'many' is not a whole number"),
    usage("sweep", "--all", says="No such option: --all"),
    usage("log", "sequence", "--batch", "0", says="'--batch': 0 is not at least 1"),
    usage("log", "sequence", "--interval", "soon", says="'soon' is not a number"),
    usage("log", "sequence", "--interval", "0.01", says="'--interval': 0.01 is not between 0.05 and 86400"),
    usage(
        "webhooks",
        "deliver",
        "--max-seconds",
        "-1",
        says="'--max-seconds': -1.0 is not between 0 and 31536000",
    ),
    usage("log", "sequence", "--max-seconds", "nan", says="'nan' is not a number"),
    usage("log", "sequence", "--interval", "inf", says="'inf' is not a number"),
    usage(
        "log", "sequence", "--interval", "1e308", says="'--interval': 1e+308 is not between 0.05 and 86400"
    ),
    usage(
        "webhooks",
        "deliver",
        "--poll-seconds",
        "1e308",
        says="'--poll-seconds': 1e+308 is not between 0.01 and 3600",
    ),
    usage(
        "webhooks",
        "deliver",
        "--max-seconds",
        "1e308",
        says="'--max-seconds': 1e+308 is not between 0 and 31536000",
    ),
    failure(
        "log",
        "sequence",
        "--once",
        env={"POKNA_PUBLIC_LOG_ORIGIN": "a+b"},
        says=("POKNA_PUBLIC_LOG_ORIGIN='a+b'",),
    ),
    usage(
        "webhooks",
        "deliver",
        "--poll-seconds",
        "0",
        says="'--poll-seconds': 0.0 is not between 0.01 and 3600",
    ),
    failure(
        "webhooks",
        "deliver",
        env={"POKNA_WEBHOOK_TIMEOUT_SECONDS": "0"},
        says=("POKNA_WEBHOOK_TIMEOUT_SECONDS='0'", "e.g. POKNA_WEBHOOK_TIMEOUT_SECONDS=10"),
    ),
    # Settings: every command that reads them names the variable and a valid value.
    failure(
        "tenants", "list", env={"POKNA_PORT": "eighty"}, says=("POKNA_PORT='eighty'", "e.g. POKNA_PORT=8000")
    ),
    failure("serve", env={"POKNA_ENV": "prod"}, says=("POKNA_ENV='prod'", "e.g. POKNA_ENV=production")),
    failure("sweep", env={"POKNA_WORKERS": "0"}, says=("POKNA_WORKERS='0'", "at least 1")),
    failure("serve", env={"POKNA_LOG_LEVEL": "chatty"}, says=("POKNA_LOG_LEVEL='chatty'", "INFO")),
    failure(
        "db",
        "upgrade",
        env={"POKNA_ENV": "production"},
        says=("POKNA_DATABASE_URL, POKNA_SIGNING_KEY, POKNA_SEED_ENCRYPTION_KEY", "pokna secrets generate"),
    ),
    failure(
        "serve",
        "--no-migrate",
        env={"POKNA_ENV": "production", "POKNA_DATABASE_URL": UNREACHABLE_PG, "POKNA_SIGNING_KEY": "x"},
        says=("set POKNA_SEED_ENCRYPTION_KEY explicitly", "pokna secrets generate"),
    ),
    # Key material.
    failure(
        "sweep",
        env={"POKNA_SEED_ENCRYPTION_KEY": "not hex"},
        says=("POKNA_SEED_ENCRYPTION_KEY is not 64 hex", "openssl rand -hex 32"),
    ),
    failure(
        "sweep",
        env={"POKNA_SEED_ENCRYPTION_KEY": "00" * 31},
        says=("POKNA_SEED_ENCRYPTION_KEY is not 64 hex",),
    ),
    failure(
        "ledger",
        "checkpoint",
        "--tenant",
        "t",
        env={"POKNA_SIGNING_KEY": "-----BEGIN PRIVATE KEY-----\\nnope\\n-----END PRIVATE KEY-----"},
        says=("POKNA_SIGNING_KEY is not an Ed25519 private key in PEM", "pokna secrets generate"),
    ),
    failure(
        "serve",
        "--no-migrate",
        env={"POKNA_SIGNING_KEY": "ssh-ed25519 AAAA"},
        says=("POKNA_SIGNING_KEY", "openssl genpkey -algorithm ed25519"),
    ),
    # The database: a URL that is not one, a database nobody answers at, a data directory Pokna cannot use.
    failure(
        "tenants",
        "list",
        env={"POKNA_DATABASE_URL": "nonsense"},
        says=("POKNA_DATABASE_URL is not a database URL",),
    ),
    failure(
        "db",
        "current",
        env={"POKNA_DATABASE_URL": "mysql://h/db"},
        says=("not 'mysql'", "POKNA_DATABASE_URL"),
    ),
    failure(
        "tenants",
        "list",
        env={"POKNA_DATABASE_URL": UNREACHABLE_PG},
        says=("cannot reach the database", "pokna:***@"),
    ),
    failure(
        "db",
        "upgrade",
        env={"POKNA_DATABASE_URL": UNREACHABLE_PG},
        says=("cannot reach the database", "POKNA_DATABASE_URL"),
    ),
    failure("db", "current", env={"POKNA_DATABASE_URL": UNREACHABLE_PG}, says=("cannot reach the database",)),
    failure(
        "ledger", "reconcile", env={"POKNA_DATABASE_URL": UNREACHABLE_PG}, says=("cannot reach the database",)
    ),
    failure("sweep", env={"POKNA_DATABASE_URL": UNREACHABLE_PG}, says=("cannot reach the database",)),
    failure(
        "webhooks", "deliver", env={"POKNA_DATABASE_URL": UNREACHABLE_PG}, says=("cannot reach the database",)
    ),
    failure("serve", env={"POKNA_DATABASE_URL": UNREACHABLE_PG}, says=("cannot reach the database",)),
    failure(
        "tenants",
        "list",
        env={"POKNA_DATA_DIR": "/proc/pokna"},
        says=("cannot use /proc/pokna", "POKNA_DATA_DIR"),
    ),
    failure(
        "db",
        "upgrade",
        env={"POKNA_DATA_DIR": "/proc/pokna"},
        says=("cannot use /proc/pokna", "POKNA_DATA_DIR"),
    ),
]

# On a migrated database with no tenant `ten_nope` (and one real tenant, for the output file row).
ON_A_DATABASE = [
    unknown_tenant("ledger", "export", "--tenant", "ten_nope"),
    unknown_tenant("ledger", "export", "--tenant", "ten_nope", "--format", "csv"),
    unknown_tenant("ledger", "export", "--tenant", "ten_nope", "--format", "beancount"),
    unknown_tenant("ledger", "reconcile", "--tenant", "ten_nope"),
    unknown_tenant("ledger", "checkpoint", "--tenant", "ten_nope"),
    unknown_tenant("tenants", "keys", "list", "ten_nope"),
    unknown_tenant("tenants", "keys", "create", "ten_nope"),
    unknown_tenant("audit", "bundle", "--tenant", "ten_nope"),
    unknown_id(
        "tenants", "keys", "revoke", "key_nope", says=("no API key 'key_nope'", "pokna tenants keys list")
    ),
    failure("tenants", "create", "", says=("a tenant name is 1-200 characters, not 0",)),
    failure("tenants", "create", "x" * 201, says=("a tenant name is 1-200 characters, not 201",)),
    # counted as kept, without spaces at either end: "not 3" would contradict "1-200"
    failure("tenants", "create", "   ", says=("a tenant name is 1-200 characters, not 0",)),
    # printed as they are by `pokna tenants list`: an escape sequence would drive the reader's terminal
    failure(
        "tenants",
        "create",
        "Chalmun\x1b[2J\tCantina",
        says=("a tenant name holds no control or invisible formatting characters, not U+0009, U+001B",),
    ),
    # a right-to-left override and a zero-width space make a name read as another's on every page and list
    failure(
        "tenants",
        "create",
        "Chalmun\u202e\u200bCantina",
        says=("a tenant name holds no control or invisible formatting characters, not U+200B, U+202E",),
    ),
    # invisible, though not of category Cf: a grapheme joiner, a Hangul filler, a variation selector
    failure(
        "tenants",
        "create",
        "Chalmun\u034f\u3164\ufe0fCantina",
        says=(
            "a tenant name holds no control or invisible formatting characters, not U+034F, U+3164, U+FE0F",
        ),
    ),
    unknown_id(
        "db",
        "downgrade",
        "nonsense",
        says=("Can't locate revision identified by 'nonsense'", "pokna db current"),
    ),
    unknown_id("db", "upgrade", "nonsense", says=("Can't locate revision identified by 'nonsense'",)),
    failure(
        "ledger",
        "export",
        "--tenant",
        "{tenant}",
        "-o",
        "/proc/pokna/out.jsonl",
        says=("cannot write /proc/pokna/out.jsonl",),
    ),
    failure(
        "ledger",
        "checkpoint",
        "--tenant",
        "{tenant}",
        "-o",
        "/proc/pokna/cp.json",
        says=("cannot write /proc/pokna/cp.json",),
    ),
]

# On a database nobody has migrated: every command that needs the schema says so and what to run.
NOT_MIGRATED = [
    failure("tenants", "list", says=SCHEMA_HINT),
    failure("tenants", "create", "Chalmun's Cantina", says=SCHEMA_HINT),
    failure("tenants", "keys", "list", "ten_x", says=SCHEMA_HINT),
    failure("tenants", "keys", "revoke", "key_x", says=SCHEMA_HINT),
    failure("ledger", "export", "--tenant", "ten_x", says=SCHEMA_HINT),
    failure("ledger", "reconcile", says=SCHEMA_HINT),
    failure("ledger", "checkpoint", "--tenant", "ten_x", says=SCHEMA_HINT),
    failure("sweep", says=SCHEMA_HINT),
    failure("webhooks", "deliver", "--drain", says=SCHEMA_HINT),
    failure("db", "downgrade", "-1", says=("pokna db current",)),
]

# As real processes: every `serve` row (it configures logging and binds a port: not in the test process),
# and a sample of every other kind; the database ones on a database of their own.
IN_PROCESS = [mistake for mistake in NO_DATABASE if mistake.argv[:1] != ("serve",)]
PROCESS_SAMPLE = [mistake for mistake in NO_DATABASE if mistake.argv[:1] == ("serve",)] + IN_PROCESS[::5]
AS_PROCESSES_ON_A_DATABASE = [ON_A_DATABASE[0], ON_A_DATABASE[4], ON_A_DATABASE[8], ON_A_DATABASE[10]]


def _check(mistake: Mistake, exit_code: int, stderr: str, stdout: str) -> None:
    shown = f"exit {exit_code}\nstderr:\n{stderr}\nstdout:\n{stdout}"
    assert exit_code == mistake.exit_code, shown
    for text in (stderr, stdout):
        assert "Traceback" not in text, shown
        assert not any(line.lstrip().startswith('File "') for line in text.splitlines()), shown
        assert "╭" not in text, shown  # no rich box
    lines = stderr.splitlines()
    assert len(lines) == 1, shown
    assert lines[0].startswith(mistake.prefix), shown
    for fragment in mistake.says:
        assert fragment in lines[0], shown


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "a-directory").mkdir()
    (tmp_path / "not-json.txt").write_text("proof? what proof\n")
    (tmp_path / "list.json").write_text("[1, 2, 3]\n")
    (tmp_path / "object.json").write_text("{}\n")
    (tmp_path / "k.pem").write_text("not a key\n")
    (tmp_path / "k.json").write_text("{}\n")
    return tmp_path


def _environment(data_dir: Path, **extra: str) -> dict[str, str]:
    clean = {name: value for name, value in os.environ.items() if not name.startswith("POKNA_")}
    return {**clean, "POKNA_ENV": "test", "POKNA_DATA_DIR": str(data_dir), **extra}


def _run(argv: tuple[str, ...], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(POKNA), *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=60, check=False
    )


@pytest.mark.parametrize("mistake", PROCESS_SAMPLE, ids=str)
def test_a_mistake_as_a_user_runs_it_is_one_line(mistake: Mistake, files: Path) -> None:
    data_dir = files / "data"
    load_service_keys(Settings(env=Environment.TEST, data_dir=data_dir))  # no "generated a key" warning
    # A free port unless the mistake is its own POKNA_PORT (passed twice, it was a TypeError, not a test).
    environment = _environment(data_dir, **{"POKNA_PORT": str(free_port()), **mistake.env})
    result = _run(mistake.argv, files, environment)
    _check(mistake, result.returncode, result.stderr, result.stdout)


@pytest.mark.parametrize("mistake", IN_PROCESS, ids=str)
def test_a_mistake_without_a_database_is_one_line(
    mistake: Mistake, files: Path, command_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(files)
    for name, value in mistake.env.items():
        monkeypatch.setenv(name, value)
    _invoke(mistake)


def test_a_taken_port_names_the_port_and_the_setting(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        mistake = failure(
            "serve",
            "--port",
            str(port),
            says=(f"port {port} on 127.0.0.1 is already in use", "--port or POKNA_PORT"),
        )
        result = _run(mistake.argv, tmp_path, _environment(tmp_path / "data"))
    _check(mistake, result.returncode, result.stderr, result.stdout)
    assert "serving" not in result.stderr + result.stdout


@pytest.fixture
def command_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    for name in list(os.environ):
        if name.startswith("POKNA_"):
            monkeypatch.delenv(name)
    data_dir = tmp_path / "data"
    monkeypatch.setenv("POKNA_ENV", "test")
    monkeypatch.setenv("POKNA_DATA_DIR", str(data_dir))
    load_service_keys(Settings(env=Environment.TEST, data_dir=data_dir))
    get_settings.cache_clear()
    yield data_dir
    get_settings.cache_clear()
    # A command that found no cluster started one (and leaves it running for the next): stop it, so that no
    # server outlives the run (issue 37, item 10).
    cluster = embedded.cluster_of(data_dir)
    if cluster.pgdata.exists():
        cluster.stop()


def _invoke(mistake: Mistake, tenant: str = "") -> None:
    argv = [arg.replace("{tenant}", tenant) for arg in mistake.argv]
    result = CliRunner().invoke(app, argv)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    _check(mistake, result.exit_code, result.stderr, result.stdout)


def _a_tenant() -> str:
    result = CliRunner().invoke(app, ["tenants", "create", "Chalmun's Cantina", "--json"])
    assert result.exit_code == 0, result.output
    tenant_id: str = json.loads(result.stdout)["tenant_id"]
    return tenant_id


@pytest.mark.parametrize("mistake", ON_A_DATABASE, ids=str)
def test_a_mistake_on_a_database_is_one_line(
    mistake: Mistake, database_url: str, command_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("POKNA_DATABASE_URL", database_url)
    _invoke(mistake, tenant=_a_tenant())


@pytest.mark.parametrize("mistake", NOT_MIGRATED, ids=str)
def test_a_database_nobody_migrated_says_to_run_db_upgrade(
    mistake: Mistake, empty_database_url: str, command_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("POKNA_DATABASE_URL", empty_database_url)
    _invoke(mistake)


@pytest.mark.parametrize("mistake", AS_PROCESSES_ON_A_DATABASE, ids=str)
def test_database_mistakes_as_a_user_runs_them(
    mistake: Mistake, tmp_path: Path, empty_database_url: str
) -> None:
    environment = _environment(tmp_path / "data", POKNA_DATABASE_URL=empty_database_url)
    load_service_keys(Settings(env=Environment.TEST, data_dir=tmp_path / "data"))
    upgraded = _run(("db", "upgrade"), tmp_path, environment)
    assert upgraded.returncode == 0, upgraded.stderr
    result = _run(mistake.argv, tmp_path, environment)
    _check(mistake, result.returncode, result.stderr, result.stdout)


def test_the_matrix_covers_every_command() -> None:
    from pokna.cli.app import COMMANDS

    rows = NO_DATABASE + ON_A_DATABASE + NOT_MIGRATED
    covered = {mistake.argv[0] for mistake in rows if mistake.argv}
    assert set(COMMANDS) <= covered
