from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from pokna.crypto.errors import InvalidKeyError
from pokna.settings import Environment, Settings


def test_default_database_is_sqlite_in_the_data_dir(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "d")
    assert settings.resolved_database_url == f"sqlite:///{(tmp_path / 'd' / 'pokna.sqlite3').resolve()}"


def test_environment_variables_configure_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POKNA_DATABASE_URL", "postgresql+psycopg://u@h/db")
    monkeypatch.setenv("POKNA_PORT", "9001")
    settings = Settings()
    assert settings.resolved_database_url == "postgresql+psycopg://u@h/db"
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

    from pokna.service_keys import load_service_keys

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
    from pokna.service_keys import load_service_keys

    settings = Settings(
        env=Environment.PRODUCTION,
        data_dir=tmp_path / "data",
        database_url="postgresql+psycopg://u@h/db",
        signing_key="not a key",
        seed_encryption_key="00" * 32,
    )
    with pytest.raises(InvalidKeyError, match="not a readable PEM"):
        load_service_keys(settings)
    assert not (tmp_path / "data").exists()
