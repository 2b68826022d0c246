from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import ValidationError

from pokna.service_keys import ServiceKeyError, load_service_keys
from pokna.settings import VALID_VALUES, Environment, Settings, SettingsError, get_settings
from pokna_verify.crypto.signing import generate_signing_key, key_id_of, private_key_to_pem


def test_default_database_is_the_embedded_postgresql(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "d")
    assert settings.database_url is None
    assert settings.embedded_database


def test_environment_variables_configure_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POKNA_DATABASE_URL", "postgresql+psycopg://u@h/db")
    monkeypatch.setenv("POKNA_PORT", "9001")
    settings = Settings()
    assert settings.database_url == "postgresql+psycopg://u@h/db"
    assert not settings.embedded_database
    assert settings.port == 9001


def test_production_refuses_development_secrets() -> None:
    with pytest.raises(ValidationError) as refused:
        Settings(env=Environment.PRODUCTION)
    message = str(refused.value)
    for variable in ("POKNA_DATABASE_URL", "POKNA_SIGNING_KEY", "POKNA_SEED_ENCRYPTION_KEY"):
        assert variable in message


def test_production_starts_with_explicit_secrets() -> None:
    settings = Settings(
        env=Environment.PRODUCTION,
        database_url="postgresql+psycopg://u@h/db",
        signing_key="-----BEGIN PRIVATE KEY-----\n...",
        seed_encryption_key="00" * 32,
    )
    assert settings.env is Environment.PRODUCTION


def test_development_keys_are_made_once_and_kept(tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    settings = Settings(env=Environment.DEVELOPMENT, data_dir=tmp_path / "data")
    with ThreadPoolExecutor(max_workers=8) as pool:
        loaded = list(pool.map(lambda _: load_service_keys(settings), range(8)))
    assert len({keys.key_id for keys in loaded}) == 1
    assert len({keys.seed_key for keys in loaded}) == 1
    assert load_service_keys(settings).key_id == loaded[0].key_id
    assert sorted(path.name for path in (tmp_path / "data" / "keys").iterdir()) == [
        "seed_encryption_key.hex",
        "signing_key.pem",
    ]
    assert ((tmp_path / "data" / "keys" / "signing_key.pem").stat().st_mode & 0o777) == 0o600


def test_production_never_generates_keys(tmp_path: Path) -> None:
    settings = Settings(
        env=Environment.PRODUCTION,
        data_dir=tmp_path / "data",
        database_url="postgresql+psycopg://u@h/db",
        signing_key="not a key",
        seed_encryption_key="00" * 32,
    )
    with pytest.raises(ServiceKeyError, match="POKNA_SIGNING_KEY is not an Ed25519 private key in PEM"):
        load_service_keys(settings)
    assert not (tmp_path / "data").exists()


@pytest.fixture
def environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    for name in list(os.environ):
        if name.startswith("POKNA_"):
            monkeypatch.delenv(name)
    get_settings.cache_clear()
    yield monkeypatch
    get_settings.cache_clear()


@pytest.mark.parametrize(
    ("variables", "expected"),
    [
        (
            {"POKNA_PORT": "eighty"},
            "POKNA_PORT='eighty' is not valid (an integer from 1 to 65535, e.g. POKNA_PORT=8000)",
        ),
        (
            {"POKNA_PORT": "0"},
            "POKNA_PORT='0' is not valid (an integer from 1 to 65535, e.g. POKNA_PORT=8000)",
        ),
        (
            {"POKNA_ENV": "prod"},
            "POKNA_ENV='prod' is not valid (one of development, test, production, e.g. POKNA_ENV=production)",
        ),
        (
            {"POKNA_LOG_LEVEL": "loud"},
            "POKNA_LOG_LEVEL='loud' is not valid (one of DEBUG, INFO, WARNING, ERROR, CRITICAL",
        ),
        (
            {"POKNA_WORKERS": "0", "POKNA_MAX_BODY_BYTES": "1"},
            "POKNA_WORKERS='0' is not valid (an integer of at least 1",
        ),
        (
            {"POKNA_WORKERS": "0", "POKNA_MAX_BODY_BYTES": "1"},
            "; POKNA_MAX_BODY_BYTES='1' is not valid (an integer of at least 1024",
        ),
        (
            {"POKNA_DATABASE_STATEMENT_TIMEOUT_SECONDS": "3000000"},
            "POKNA_DATABASE_STATEMENT_TIMEOUT_SECONDS='3000000' is not valid (an integer from 1 to 2000000",
        ),
        (
            {"POKNA_PUBLIC_LOG_ORIGIN": "https://pokna.example/games/"},
            "POKNA_PUBLIC_LOG_ORIGIN='https://pokna.example/games/' is not valid (a host and path, no scheme",
        ),
        (
            {"POKNA_PUBLIC_LOG_ORIGIN": "https://log.example"},
            "POKNA_PUBLIC_LOG_ORIGIN='https://log.example' is not valid (a host and path, no scheme",
        ),
        (
            {"POKNA_ENV": "production", "POKNA_DATABASE_URL": "postgresql+psycopg://u@h/db"},
            "set POKNA_SIGNING_KEY, POKNA_SEED_ENCRYPTION_KEY explicitly (`pokna secrets generate` prints",
        ),
    ],
)
def test_a_wrong_environment_names_the_variable_and_a_valid_value(
    environment: pytest.MonkeyPatch, variables: dict[str, str], expected: str
) -> None:
    for name, value in variables.items():
        environment.setenv(name, value)
    with pytest.raises(SettingsError) as refused:
        get_settings()
    assert expected in str(refused.value)
    assert "\n" not in str(refused.value)
    assert "pydantic" not in str(refused.value)


def test_every_variable_has_a_valid_value_to_name() -> None:
    assert set(Settings.model_fields) <= set(VALID_VALUES)


def test_a_settings_error_never_echoes_a_secret(environment: pytest.MonkeyPatch) -> None:
    environment.setenv("POKNA_DATABASE_URL", "postgresql+psycopg://u:hunter2@h/db")
    environment.setenv("POKNA_ENV", "production")
    with pytest.raises(SettingsError) as refused:
        get_settings()
    assert "hunter2" not in str(refused.value)


@pytest.mark.parametrize(
    ("seed_key", "signing_key", "expected"),
    [
        ("zz" * 32, None, "POKNA_SEED_ENCRYPTION_KEY is not 64 hex characters"),
        ("00" * 16, None, "POKNA_SEED_ENCRYPTION_KEY is not 64 hex characters"),
        (
            "00" * 32,
            "-----BEGIN PRIVATE KEY-----\\nAAAA\\n-----END PRIVATE KEY-----",
            "POKNA_SIGNING_KEY is not an Ed25519",
        ),
    ],
)
def test_bad_key_material_names_the_variable_and_how_to_make_one(
    tmp_path: Path, seed_key: str, signing_key: str | None, expected: str
) -> None:
    settings = Settings(
        env=Environment.TEST, data_dir=tmp_path, seed_encryption_key=seed_key, signing_key=signing_key
    )
    with pytest.raises(ServiceKeyError) as refused:
        load_service_keys(settings)
    assert expected in str(refused.value)
    assert "pokna secrets generate" in str(refused.value)


def test_a_pem_pasted_on_one_line_with_literal_newlines_is_read_as_meant(tmp_path: Path) -> None:
    key = generate_signing_key()
    one_line = private_key_to_pem(key).decode().strip().replace("\n", "\\n")
    assert "\n" not in one_line
    settings = Settings(
        env=Environment.TEST, data_dir=tmp_path, signing_key=one_line, seed_encryption_key="11" * 32
    )
    assert load_service_keys(settings).key_id == key_id_of(key.public_key())


def test_an_unreadable_retired_key_is_named(tmp_path: Path) -> None:
    retired = tmp_path / "keys" / "retired"
    retired.mkdir(parents=True)
    (retired / "2025.pem").write_text("not a key")
    settings = Settings(env=Environment.TEST, data_dir=tmp_path)
    with pytest.raises(
        ServiceKeyError, match=r"retired key .*2025\.pem is not a readable Ed25519 public key"
    ):
        load_service_keys(settings)


FLOAT_SETTINGS = sorted(name for name, field in Settings.model_fields.items() if field.annotation is float)


@pytest.mark.parametrize("value", ["inf", "nan", "1e308", "-inf"])
@pytest.mark.parametrize("field", FLOAT_SETTINGS)
def test_a_float_setting_refuses_what_no_clock_or_rate_can_use(
    environment: pytest.MonkeyPatch, field: str, value: str
) -> None:
    """Infinity, NaN and a number past any sane bound (1e308 seconds overflows the clocks it is handed to)
    are refused, naming the variable and a valid value."""
    variable = f"POKNA_{field.upper()}"
    environment.setenv(variable, value)
    with pytest.raises(SettingsError) as refused:
        get_settings()
    assert f"{variable}='{value}' is not valid ({VALID_VALUES[field]})" in str(refused.value)


def test_the_float_settings_are_found() -> None:
    assert len(FLOAT_SETTINGS) == 10, FLOAT_SETTINGS
