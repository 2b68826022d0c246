"""Configuration from `POKNA_*` environment variables.

Development generates its own keys into the data directory so `pokna serve` works with zero setup;
production refuses to start unless every secret is supplied explicitly.
"""

from __future__ import annotations

from enum import StrEnum
from functools import lru_cache
from pathlib import Path

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class Environment(StrEnum):
    DEVELOPMENT = "development"
    TEST = "test"
    PRODUCTION = "production"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="POKNA_", extra="ignore")

    env: Environment = Environment.DEVELOPMENT
    data_dir: Path = Path(".pokna")
    database_url: str | None = Field(
        default=None,
        description="SQLAlchemy URL; unset means an SQLite file in the data directory.",
    )
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=1, le=65535)
    workers: int = Field(default=1, ge=1)
    log_level: str = "INFO"
    max_body_bytes: int = Field(default=64 * 1024, ge=1024)
    open_game_ttl_seconds: int = Field(
        default=600, ge=1, description="A game not started within this many seconds is cancelled."
    )
    signing_key: SecretStr | None = Field(
        default=None, description="Ed25519 private key, PEM (PKCS#8). Unset: generated in the data dir."
    )
    seed_encryption_key: SecretStr | None = Field(
        default=None, description="AES-256-GCM key for unrevealed server seeds, 64 hex characters."
    )

    @model_validator(mode="after")
    def _production_needs_real_secrets(self) -> Settings:
        if self.env is Environment.PRODUCTION:
            missing = [
                name
                for name, value in (
                    ("POKNA_DATABASE_URL", self.database_url),
                    ("POKNA_SIGNING_KEY", self.signing_key),
                    ("POKNA_SEED_ENCRYPTION_KEY", self.seed_encryption_key),
                )
                if not value
            ]
            if missing:
                raise ValueError(
                    "production refuses development secrets; set " + ", ".join(missing) + " explicitly"
                )
        return self

    @property
    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.data_dir / 'pokna.sqlite3').resolve()}"


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
