from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

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
