"""`pokna secrets generate` output is loaded back the way production loads it: through `Settings` in
production mode and `load_service_keys`, from an env file, from a shell that sourced it, from a Compose
override and from JSON. No database needed."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from typer.testing import CliRunner

from pokna.cli.app import app
from pokna.cli.secrets import COMPOSE_SERVICES
from pokna.service_keys import ServiceKeys, load_service_keys
from pokna.settings import Environment, Settings, get_settings
from pokna_verify.crypto.signing import key_id_of, load_public_key_pem
from pokna_verify.fairness.seed_vault import open_server_seed, seal_server_seed

ROOT = Path(__file__).resolve().parents[2]
POSTGRES_URL = "postgresql+psycopg://pokna:secret@postgres:5432/pokna"  # never connected to
runner = CliRunner()


@pytest.fixture(autouse=True)
def no_pokna_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in list(os.environ):
        if name.startswith("POKNA_") and not name.startswith("POKNA_TEST_"):
            monkeypatch.delenv(name)
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def _generate(*args: str) -> tuple[str, str]:
    result = runner.invoke(app, ["secrets", "generate", *args])
    assert result.exit_code == 0, result.output
    return result.stdout, result.stderr


def _announced_key_id(stderr: str) -> str:
    return stderr.split("New signing key ", 1)[1].split(".", 1)[0]


def _production_keys(tmp_path: Path, **values: Any) -> ServiceKeys:
    settings = Settings(
        env=Environment.PRODUCTION, data_dir=tmp_path / "data", database_url=POSTGRES_URL, **values
    )
    keys = load_service_keys(settings)
    assert not (tmp_path / "data").exists(), "production must not have generated a development key"
    return keys


def _assert_usable(keys: ServiceKeys, key_id: str) -> None:
    assert keys.key_id == key_id
    assert len(keys.seed_key) == 32
    token = seal_server_seed("ab" * 32, keys.seed_key, "game_1")
    assert open_server_seed(token, keys.seed_key, "game_1") == "ab" * 32


def test_the_env_format_loads_through_an_env_file_in_production(tmp_path: Path) -> None:
    stdout, stderr = _generate()
    env_file = tmp_path / "pokna.env"
    env_file.write_text(stdout)
    keys = _production_keys(tmp_path, _env_file=env_file)
    _assert_usable(keys, _announced_key_id(stderr))
    assert f"signing key {keys.key_id}" in stdout.splitlines()[0]


def test_the_env_format_loads_after_a_shell_sources_it(tmp_path: Path) -> None:
    """`set -a; . ./pokna.env` as a start script would do; the PEM must survive the shell's quoting."""
    stdout, stderr = _generate()
    (tmp_path / "pokna.env").write_text(stdout)
    program = (
        "from pokna.settings import Settings; from pokna.service_keys import load_service_keys; "
        "print(load_service_keys(Settings()).key_id)"
    )
    result = subprocess.run(
        ["sh", "-c", 'set -a; . ./pokna.env; exec "$0" -c "$1"', sys.executable, program],
        cwd=tmp_path,
        env={
            "PATH": os.environ["PATH"],
            "POKNA_ENV": "production",
            "POKNA_DATABASE_URL": POSTGRES_URL,
            "POKNA_DATA_DIR": str(tmp_path / "data"),
        },
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == _announced_key_id(stderr)


def test_the_compose_format_is_an_override_every_keyed_service_takes(tmp_path: Path) -> None:
    stdout, stderr = _generate("--format", "compose")
    override = yaml.safe_load(stdout)
    schema = json.loads((ROOT / "tests" / "fixtures" / "compose_spec.json").read_text())
    jsonschema.Draft201909Validator(schema).validate(override)
    base = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    keyed = {name for name, service in base.items() if "POKNA_SIGNING_KEY" in service.get("environment", {})}
    assert keyed == set(COMPOSE_SERVICES) == set(override["services"])
    environments = [override["services"][name]["environment"] for name in COMPOSE_SERVICES]
    assert all(environment == environments[0] for environment in environments)
    _assert_usable(
        _production_keys(
            tmp_path,
            signing_key=environments[0]["POKNA_SIGNING_KEY"],
            seed_encryption_key=environments[0]["POKNA_SEED_ENCRYPTION_KEY"],
        ),
        _announced_key_id(stderr),
    )


def test_the_json_format_names_the_variables(tmp_path: Path) -> None:
    stdout, stderr = _generate("--format", "json")
    document = json.loads(stdout)
    assert document["key_id"] == _announced_key_id(stderr)
    keys = _production_keys(
        tmp_path,
        signing_key=document["POKNA_SIGNING_KEY"],
        seed_encryption_key=document["POKNA_SEED_ENCRYPTION_KEY"],
    )
    _assert_usable(keys, document["key_id"])


def test_every_run_is_a_fresh_set_and_the_advice_stays_off_stdout() -> None:
    first, first_advice = _generate("--format", "json")
    second, _ = _generate("--format", "json")
    one, two = json.loads(first), json.loads(second)
    assert one["POKNA_SIGNING_KEY"] != two["POKNA_SIGNING_KEY"]
    assert one["POKNA_SEED_ENCRYPTION_KEY"] != two["POKNA_SEED_ENCRYPTION_KEY"]
    assert "POKNA_SEED_ENCRYPTION_KEY" in first_advice
    assert "Store these secrets" not in first


def test_output_writes_a_new_private_file_and_never_overwrites(tmp_path: Path) -> None:
    target = tmp_path / "pokna.env"
    stdout, stderr = _generate("--output", str(target))
    assert stdout == ""
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    written = target.read_text()
    assert f"signing key {_announced_key_id(stderr)}" in written

    again = runner.invoke(app, ["secrets", "generate", "--output", str(target)])
    assert again.exit_code == 2
    assert "refusing to overwrite" in again.output
    assert target.read_text() == written


def test_an_unknown_format_is_a_usage_error() -> None:
    result = runner.invoke(app, ["secrets", "generate", "--format", "yaml"])
    assert result.exit_code == 2
    assert "--format" in result.output


def test_public_key_prints_the_public_half_of_the_configured_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    document = json.loads(_generate("--format", "json")[0])
    monkeypatch.setenv("POKNA_ENV", "production")
    monkeypatch.setenv("POKNA_DATABASE_URL", POSTGRES_URL)
    monkeypatch.setenv("POKNA_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("POKNA_SIGNING_KEY", document["POKNA_SIGNING_KEY"])
    monkeypatch.setenv("POKNA_SEED_ENCRYPTION_KEY", document["POKNA_SEED_ENCRYPTION_KEY"])
    result = runner.invoke(app, ["secrets", "public-key"])
    assert result.exit_code == 0, result.output
    assert "PRIVATE" not in result.stdout
    assert key_id_of(load_public_key_pem(result.stdout.encode())) == document["key_id"]
    assert document["key_id"] in result.stderr


def _file_public_key(monkeypatch: pytest.MonkeyPatch, document: dict[str, str], output: Path) -> Any:
    monkeypatch.setenv("POKNA_SIGNING_KEY", document["POKNA_SIGNING_KEY"])
    monkeypatch.setenv("POKNA_SEED_ENCRYPTION_KEY", document["POKNA_SEED_ENCRYPTION_KEY"])
    get_settings.cache_clear()
    return runner.invoke(app, ["secrets", "public-key", "--output", str(output)])


def test_public_key_never_overwrites_a_retired_key_with_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second rotation filed under the first one's name would lose the first key for good, and with it
    every proof and checkpoint it signed; the same key filed again loses nothing, so it is done again."""
    monkeypatch.setenv("POKNA_ENV", "production")
    monkeypatch.setenv("POKNA_DATABASE_URL", POSTGRES_URL)
    monkeypatch.setenv("POKNA_DATA_DIR", str(tmp_path / "data"))
    retired = tmp_path / "data" / "keys" / "retired" / "old.pem"
    first = json.loads(_generate("--format", "json")[0])
    for _ in range(2):
        filed = _file_public_key(monkeypatch, first, retired)
        assert filed.exit_code == 0, filed.output
    first_pem = retired.read_text()
    refused = _file_public_key(monkeypatch, json.loads(_generate("--format", "json")[0]), retired)
    assert refused.exit_code == 2
    assert f"{retired} exists and is not this key" in refused.stderr
    assert retired.read_text() == first_pem
