"""Migration 0026 carries each endpoint's previous secret over into the arrays of earlier secrets, the
database refuses arrays that do not pair up (or hold too many), and the downgrade keeps the newest earlier
secret: a database at 0025 with endpoints, upgraded, downgraded and upgraded again."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.exc import IntegrityError

from pokna.db import migrate
from pokna.db.engine import make_engine
from pokna.db.types import utc_now
from support.ledger_history import new_tenant_row

BEFORE = "0026_webhook_secret_overlaps"
PREVIOUS = "0025_posting_created_at"
INSERT_0025 = (
    "INSERT INTO webhook_endpoint (id, tenant_id, url, description, event_types, enabled, sealed_secret, "
    "sealed_previous_secret, previous_secret_expires_at, created_at, updated_at) VALUES (:id, :tenant_id, "
    "'http://127.0.0.1:9/hooks', NULL, '[\"game.turn\"]', true, :current, :previous, :ends, :now, :now)"
)
ARRAYS = "SELECT id, sealed_previous_secrets, previous_secrets_expire_at FROM webhook_endpoint ORDER BY id"
SINGLE = "SELECT id, sealed_previous_secret, previous_secret_expires_at FROM webhook_endpoint ORDER BY id"


def _rows(engine: Engine, query: str) -> list[tuple[Any, ...]]:
    with engine.connect() as connection:
        return [tuple(row) for row in connection.execute(text(query))]


def _set_arrays(engine: Engine, sealed: list[str], ends: list[datetime]) -> None:
    with engine.begin() as connection:
        connection.execute(
            text(
                "UPDATE webhook_endpoint SET sealed_previous_secrets = :sealed, "
                "previous_secrets_expire_at = :ends WHERE id = 'whep_rotated'"
            ),
            {"sealed": sealed, "ends": ends},
        )


def test_0026_carries_the_previous_secret_over_and_back(empty_database_url: str) -> None:
    migrate.upgrade(empty_database_url, PREVIOUS)
    engine = make_engine(empty_database_url)
    now = utc_now()
    ends = now + timedelta(days=1)
    try:
        tenant_id = new_tenant_row(engine)
        with engine.begin() as connection:
            for endpoint_id, previous, expires in (
                ("whep_fresh", None, None),
                ("whep_rotated", "v1.b.b", ends),
                # a previous secret with no end never signed (the claim asked for both): nothing to carry
                ("whep_unended", "v1.d.d", None),
            ):
                values = {"id": endpoint_id, "tenant_id": tenant_id, "current": "v1.a.a", "now": now}
                connection.execute(text(INSERT_0025), {**values, "previous": previous, "ends": expires})

        migrate.upgrade(empty_database_url, BEFORE)
        engine.dispose()
        assert _rows(engine, ARRAYS) == [
            ("whep_fresh", [], []),
            ("whep_rotated", ["v1.b.b"], [ends]),
            ("whep_unended", [], []),
        ]

        for sealed, until in ((["v1.b.b"], []), (["v1.b.b"] * 4, [ends] * 4)):
            with pytest.raises(IntegrityError, match="ck_webhook_endpoint_previous_secrets_paired"):
                _set_arrays(engine, sealed, until)
        later = ends + timedelta(hours=1)
        _set_arrays(engine, ["v1.c.c", "v1.b.b"], [later, ends])

        migrate.downgrade(empty_database_url, PREVIOUS)
        engine.dispose()
        assert _rows(engine, SINGLE) == [
            ("whep_fresh", None, None),
            ("whep_rotated", "v1.c.c", later),
            ("whep_unended", None, None),
        ]
        migrate.upgrade(empty_database_url)
        engine.dispose()
        assert _rows(engine, ARRAYS) == [
            ("whep_fresh", [], []),
            ("whep_rotated", ["v1.c.c"], [later]),
            ("whep_unended", [], []),
        ]
    finally:
        engine.dispose()
