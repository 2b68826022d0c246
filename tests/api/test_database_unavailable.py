"""A database that cannot serve now is a 503 `database_unavailable` with `Retry-After`, never a 500, and
the request it refused may be retried with its key: nothing of it was committed, its claim is free.

Each way the database can be away is made real here: a pool with no connection free, a database turned
read-only, a server nobody listens on. A
stopped and restarted PostgreSQL under load is tests/faults/test_outage.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Connection, text
from sqlalchemy.engine import make_url

from pokna.api.database_gate import DatabaseGate
from pokna.app import create_app
from pokna.db.backend import conninfo_of
from pokna.db.engine import make_engine
from pokna.db.sqlstates import unavailable_reason
from pokna.runtime import Runtime
from pokna.settings import Environment, Settings
from support.api_checks import assert_problem
from support.game_play import obliging
from support.tenant_api import TenantApi, new_tenant

RETRY_AFTER = 3


@contextmanager
def tight_service(database_url: str, tmp_path: Path) -> Iterator[tuple[TenantApi, Runtime]]:
    """The API with short waits and one pooled connection (no overflow), on `database_url`."""
    settings = Settings(
        env=Environment.TEST,
        data_dir=tmp_path / "data",
        database_url=database_url,
        database_pool_timeout_seconds=0.5,
        database_statement_timeout_seconds=1,
        database_retry_after_seconds=RETRY_AFTER,
        database_pool_size=1,
        database_pool_overflow=0,
    )
    runtime = Runtime.from_settings(settings)
    with TestClient(create_app(settings, runtime), raise_server_exceptions=False) as client:
        yield new_tenant(client, database_url), runtime


@pytest.fixture
def tight(database_url: str, tmp_path: Path) -> Iterator[tuple[TenantApi, Runtime]]:
    with tight_service(database_url, tmp_path) as service:
        yield service


def _unavailable(response: object) -> None:
    problem = assert_problem(response, 503, "database_unavailable")
    assert "nothing was committed" in problem["detail"]
    assert response.headers["retry-after"] == str(RETRY_AFTER)  # type: ignore[attr-defined]


def test_no_free_connection_is_503_and_the_refused_write_applies_once_retried(
    tight: tuple[TenantApi, Runtime],
) -> None:
    """Every request waits for a place at the database gate, one per connection of the pool (here one);
    with it held for longer than the pool's timeout, a keyed deposit and a read are refused, nothing of
    them committed, and the deposit retried under its key applies once."""
    tight_api, _ = tight
    wallet = tight_api.wallet()
    client = tight_api.client
    gate: DatabaseGate = client.app.state.database_gate  # type: ignore[attr-defined]
    assert gate.places == 1
    client.portal.call(gate.enter, b"a long request")  # type: ignore[union-attr]
    try:
        keyed = {"Idempotency-Key": "d"}
        _unavailable(tight_api.post(f"/v1/accounts/{wallet}/deposits", {"amount": 9}, headers=keyed))
        _unavailable(tight_api.get(f"/v1/accounts/{wallet}"))
        # Readiness is the database's, on a connection of its own: a full pool is the gate's queue
        # (pokna_db_gate_*), not a reason to take every instance out of rotation under load.
        assert tight_api.get("/readyz").status_code == 200
    finally:
        client.portal.call(gate.leave, b"a long request")  # type: ignore[union-attr]
    assert tight_api.balance(wallet) == 0
    moved = tight_api.post(f"/v1/accounts/{wallet}/deposits", {"amount": 9}, headers={"Idempotency-Key": "d"})
    assert moved.status_code == 201, moved.text
    assert "idempotent-replayed" not in moved.headers
    assert tight_api.balance(wallet) == 9


def _end_its_sessions(connection: Connection, database: str | None) -> None:
    """Every other session on `database` ends, and is gone once this returns: the service's pools replace
    a connection the server closed at its next checkout (pokna.db.aio)."""
    connection.execute(
        text(
            "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE datname = :name AND pid <> pg_backend_pid()"
        ),
        {"name": database},
    )


def test_a_read_only_database_is_503_and_the_key_stays_retryable(
    tight: tuple[TenantApi, Runtime], database_url: str
) -> None:
    """What a service pointed at a standby that has not been promoted sees."""
    tight_api, _runtime = tight
    wallet = tight_api.wallet()
    path = f"/v1/accounts/{wallet}/deposits"
    keyed = {"Idempotency-Key": "standby-1"}
    database = make_url(database_url).database
    admin = make_engine(database_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as connection:
            connection.execute(text(f'ALTER DATABASE "{database}" SET default_transaction_read_only = on'))
            _end_its_sessions(connection, database)  # the service's next connections read the setting
        _unavailable(tight_api.post(path, {"amount": 6}, headers=keyed))
        assert_problem(tight_api.get("/readyz"), 503, "database_unavailable")  # reads work; not ready
        with admin.connect() as connection:
            connection.execute(text(f'ALTER DATABASE "{database}" RESET default_transaction_read_only'))
            _end_its_sessions(connection, database)
    finally:
        admin.dispose()
    assert tight_api.post(path, {"amount": 6}, headers=keyed).status_code == 201
    assert tight_api.balance(wallet) == 6


def test_an_unreachable_server_is_503_on_a_write_too(tmp_path: Path) -> None:
    settings = Settings(
        env=Environment.TEST,
        data_dir=tmp_path / "data",
        database_url="postgresql+psycopg://nobody@127.0.0.1:1/nowhere",
        database_connect_timeout_seconds=2,
        database_retry_after_seconds=RETRY_AFTER,
    )
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        response = client.post(
            "/v1/accounts", json={}, headers={"Authorization": "Bearer pk_x", "Idempotency-Key": "k"}
        )
    _unavailable(response)


def test_a_database_error_that_is_a_bug_is_not_called_an_outage(database_url: str) -> None:
    with psycopg.connect(conninfo_of(database_url)) as connection:
        with pytest.raises(psycopg.errors.NotNullViolation) as raised:
            connection.execute("INSERT INTO tenant (id) VALUES (NULL)")
        connection.rollback()
        with pytest.raises(psycopg.errors.UndefinedTable) as missing:
            connection.execute("SELECT * FROM no_such_table")
    assert unavailable_reason(raised.value) is None
    assert unavailable_reason(missing.value) is None


def test_work_past_the_statement_timeout_is_503_and_its_claim_is_released(
    tight: tuple[TenantApi, Runtime], database_url: str
) -> None:
    """A deposit stuck behind another transaction's lock on the tenant's ledger head: refused after the
    statement timeout, in the middle of its work, with its claim released for the retry."""
    tight_api, _runtime = tight
    wallet = tight_api.wallet(balance=1)  # the tenant's ledger head exists from its first posting
    path = f"/v1/accounts/{wallet}/deposits"
    keyed = {"Idempotency-Key": "stuck-1"}
    other = make_engine(database_url)
    try:
        with other.connect() as holder:
            holder.execute(
                text("SELECT 1 FROM ledger_head WHERE tenant_id = :tenant FOR UPDATE"),
                {"tenant": tight_api.tenant_id},
            )
            _unavailable(tight_api.post(path, {"amount": 8}, headers=keyed))
            holder.rollback()
    finally:
        other.dispose()
    applied = tight_api.post(path, {"amount": 8}, headers=keyed)
    assert applied.status_code == 201, applied.text
    assert "idempotent-replayed" not in applied.headers
    assert tight_api.balance(wallet) == 1 + 8


@pytest.mark.parametrize(
    ("sqlstate", "message"),
    [
        ("XX000", "cannot execute a distributed query from a query on a shard"),
        ("40001", "shard for the given value does not exist"),
    ],
)
def test_a_shard_moving_under_a_request_is_503_and_the_key_stays_retryable(
    tight: tuple[TenantApi, Runtime], database_url: str, sqlstate: str, message: str
) -> None:
    """Citus's errors of a shard move's switch-over (pokna.db.sqlstates.SHARD_MOVING), raised by a real
    trigger where Citus raises them, under the delegated functions' writes: a keyed deposit (ledger_move())
    and a keyed game action (game_write()). Each answers 503 with Retry-After, and its retry under the same
    key, once the shard is where the metadata says, is applied once."""
    tight_api, _runtime = tight
    wallets = [tight_api.wallet(balance=20) for _ in range(3)]
    body = {"vigo_account_id": wallets[0], "player_account_ids": wallets[1:], "stake": 3}
    created = tight_api.post("/v1/games", body)
    assert created.status_code == 201, created.text
    game = created.json()
    deposit, action = f"/v1/accounts/{wallets[0]}/deposits", f"/v1/games/{game['id']}/actions"
    keys = {deposit: {"Idempotency-Key": "moving-1"}, action: {"Idempotency-Key": "moving-2"}}
    bodies = {deposit: {"amount": 5}, action: obliging(game)}
    admin = make_engine(database_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as connection:
            connection.execute(
                text(
                    "CREATE FUNCTION shard_moved_away() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                    f"RAISE EXCEPTION USING MESSAGE = '{message}', ERRCODE = '{sqlstate}'; END $$"
                )
            )
            for table in ("journal_transaction", "game_event"):
                connection.execute(
                    text(
                        f"CREATE TRIGGER shard_moved_away BEFORE INSERT ON {table} "
                        "FOR EACH ROW EXECUTE FUNCTION shard_moved_away()"
                    )
                )
        for path in (deposit, action):
            _unavailable(tight_api.post(path, bodies[path], headers=keys[path]))
        with admin.connect() as connection:
            connection.execute(text("DROP FUNCTION shard_moved_away() CASCADE"))
    finally:
        admin.dispose()
    for path in (deposit, action):
        applied = tight_api.post(path, bodies[path], headers=keys[path])
        assert applied.status_code in (200, 201), applied.text
        assert "idempotent-replayed" not in applied.headers
    assert tight_api.balance(wallets[0]) == 20 + 5
