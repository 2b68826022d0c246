"""What the fault tests share around their servers: PostgreSQL servers of their own (they are stopped,
crashed and killed, so never the run's shared cluster; durable, as production is), a service's
configuration, and a tenant on it."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from pokna_verify.crypto.signing import generate_signing_key, private_key_to_pem
from pokna_verify.fairness.seed_vault import generate_vault_key
from support.driver import new_api_key
from support.postgres import Cluster, start_cluster

_SIGNING_KEY = private_key_to_pem(generate_signing_key()).decode()
_VAULT_KEY = generate_vault_key().hex()


def service_env(database_url: str) -> dict[str, str]:
    """Production settings, shared by every replica: the waits short enough for a test to see them."""
    return {
        "POKNA_ENV": "production",
        "POKNA_DATABASE_URL": database_url,
        "POKNA_SIGNING_KEY": _SIGNING_KEY,
        "POKNA_SEED_ENCRYPTION_KEY": _VAULT_KEY,
        "POKNA_LOG_LEVEL": "WARNING",
        "POKNA_DATABASE_CONNECT_TIMEOUT_SECONDS": "2",
        "POKNA_DATABASE_POOL_TIMEOUT_SECONDS": "5",
        "POKNA_DATABASE_STATEMENT_TIMEOUT_SECONDS": "10",
        "POKNA_DATABASE_RETRY_AFTER_SECONDS": "1",
    }


def tenant_on(database_url: str) -> tuple[str, str]:
    """A new tenant and its API key, written straight to the database (as `pokna tenants create` does)."""
    issued = new_api_key(database_url, "Chalmun's Cantina")
    return issued.tenant_id, issued.secret


@pytest.fixture
def durable_primary() -> Iterator[Cluster]:
    if reason := os.environ.get("POKNA_TEST_PG_UNAVAILABLE"):
        pytest.skip(f"PostgreSQL unavailable: {reason}")
    cluster = start_cluster(durable=True)
    try:
        yield cluster
    finally:
        cluster.stop()
