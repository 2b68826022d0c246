"""Migration 0026 on a distributed database that already holds webhook endpoints, as an operator's Citus
database at 0025 is: the previous secret is carried over into the arrays on every shard, the pairing check
holds on every shard, and the downgrade and a second upgrade carry them back and over again."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from pokna.db import distribution, migrate
from pokna.db.engine import make_engine
from pokna.db.types import utc_now
from support.citus import CitusCluster
from support.ledger_history import new_tenant_row

INSERT_0025 = (
    "INSERT INTO webhook_endpoint (id, tenant_id, url, description, event_types, enabled, sealed_secret, "
    "sealed_previous_secret, previous_secret_expires_at, created_at, updated_at) VALUES (:id, :tenant_id, "
    "'http://127.0.0.1:9/hooks', NULL, '[\"game.turn\"]', true, 'v1.a.a', :previous, :ends, :now, :now)"
)
ARRAYS = (
    "SELECT tenant_id, id, sealed_previous_secrets, previous_secrets_expire_at FROM webhook_endpoint "
    "ORDER BY tenant_id, id"
)
SINGLE = (
    "SELECT tenant_id, id, sealed_previous_secret, previous_secret_expires_at FROM webhook_endpoint "
    "ORDER BY tenant_id, id"
)


def test_0026_carries_previous_secrets_over_and_back_on_a_distributed_table(
    citus_cluster: CitusCluster,
) -> None:
    url = citus_cluster.new_database(f"pokna_citus_{uuid.uuid4().hex[:10]}")
    engine = make_engine(url)
    now = utc_now()
    ends = now + timedelta(days=1)
    try:
        migrate.upgrade(url, "0025_posting_created_at")
        with engine.begin() as connection:
            assert distribution.distribute(connection)  # what `pokna db upgrade` did at 0025
        tenants = sorted(new_tenant_row(engine, name) for name in ("Tosche Station", "Mos Eisley", "Bestine"))
        with engine.begin() as connection:
            for tenant_id in tenants:
                for endpoint_id, previous, until in (("whep_a", None, None), ("whep_b", "v1.b.b", ends)):
                    values = {"id": endpoint_id, "tenant_id": tenant_id, "previous": previous, "ends": until}
                    connection.execute(text(INSERT_0025), {**values, "now": now})
        carried = [
            row
            for tenant_id in tenants
            for row in ((tenant_id, "whep_a", [], []), (tenant_id, "whep_b", ["v1.b.b"], [ends]))
        ]
        single = [
            row
            for tenant_id in tenants
            for row in ((tenant_id, "whep_a", None, None), (tenant_id, "whep_b", "v1.b.b", ends))
        ]

        migrate.upgrade(url)
        engine.dispose()
        with engine.connect() as connection:
            assert [tuple(row) for row in connection.execute(text(ARRAYS))] == carried
        with pytest.raises(DBAPIError, match="previous_secrets_paired"), engine.begin() as connection:
            connection.execute(
                text(
                    "UPDATE webhook_endpoint SET previous_secrets_expire_at = '{}' "
                    "WHERE tenant_id = :tenant AND id = 'whep_b'"
                ),
                {"tenant": tenants[-1]},
            )

        migrate.downgrade(url, "0025_posting_created_at")
        engine.dispose()
        with engine.connect() as connection:
            assert [tuple(row) for row in connection.execute(text(SINGLE))] == single
        migrate.upgrade(url)
        engine.dispose()
        with engine.connect() as connection:
            assert [tuple(row) for row in connection.execute(text(ARRAYS))] == carried
    finally:
        engine.dispose()
