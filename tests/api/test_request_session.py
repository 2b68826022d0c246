"""No request holds an ORM session (`pokna.api.deps`: every route is on psycopg's pool), and a write whose
COMMIT the database refuses answers an error and leaves nothing behind."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, event, text
from sqlalchemy.orm import Session, sessionmaker

from support.api_checks import assert_problem, database_state
from support.tenant_api import TenantApi, new_tenant

KEY_HEADER = "Idempotency-Key"
REPLAYED = "idempotent-replayed"

# A deferred foreign key the account table's trigger breaks: the database accepts every statement of a
# transaction that opens an account and refuses its COMMIT, as it would for any deferred constraint.
_ARM = [
    "CREATE TABLE commit_guard_parent (id integer PRIMARY KEY)",
    "CREATE TABLE commit_guard (parent_id integer REFERENCES commit_guard_parent (id) "
    "DEFERRABLE INITIALLY DEFERRED)",
    "CREATE FUNCTION commit_guard_doom() RETURNS trigger LANGUAGE plpgsql AS "
    "$$ BEGIN INSERT INTO commit_guard VALUES (1); RETURN NULL; END $$",
    "CREATE TRIGGER commit_guard_on_account AFTER INSERT ON account "
    "FOR EACH ROW EXECUTE FUNCTION commit_guard_doom()",
]
_DISARM = "DROP TRIGGER commit_guard_on_account ON account"


@contextmanager
def commits_refused_when_an_account_opens(engine: Engine) -> Iterator[None]:
    with engine.begin() as connection:
        for statement in _ARM:
            connection.execute(text(statement))
    try:
        yield
    finally:
        with engine.begin() as connection:
            connection.execute(text(_DISARM))


@pytest.fixture
def api(client: TestClient, sessions: sessionmaker[Session]) -> TenantApi:
    return new_tenant(client, sessions)


def test_a_commit_the_database_refuses_is_an_error_answer_and_writes_nothing(
    api: TenantApi, engine: Engine, sessions: sessionmaker[Session]
) -> None:
    before = database_state(sessions)
    with commits_refused_when_an_account_opens(engine):
        assert_problem(api.post("/v1/accounts", {}), 500, "internal_error")
        keyed = api.post("/v1/accounts", {}, headers={KEY_HEADER: "open-once"})
        assert_problem(keyed, 500, "internal_error")
        assert REPLAYED not in keyed.headers
        assert database_state(sessions) == before  # no account, no posting, and no claim left behind

    opened = api.post("/v1/accounts", {}, headers={KEY_HEADER: "open-once"})
    assert opened.status_code == 201, opened.text  # the failed commit released the key: this is no replay
    assert REPLAYED not in opened.headers
    after = database_state(sessions)
    assert after["counts"]["account"] == before["counts"]["account"] + 1
    assert after["claims"] == {**before["claims"], (api.tenant_id, "open-once"): 201}


class _ConnectionUse:
    """Counts what the engine's pool and connections do while it listens."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.checkouts = self.commits = self.rollbacks = self.held = self.most_held = 0

    def _checkout(self, *_: Any) -> None:
        self.checkouts += 1
        self.held += 1
        self.most_held = max(self.most_held, self.held)

    def _checkin(self, *_: Any) -> None:
        self.held -= 1

    def _commit(self, *_: Any) -> None:
        self.commits += 1

    def _rollback(self, *_: Any) -> None:
        self.rollbacks += 1

    @contextmanager
    def listening(self) -> Iterator[_ConnectionUse]:
        hooks = [
            (self.engine.pool, "checkout", self._checkout),
            (self.engine.pool, "checkin", self._checkin),
            (self.engine, "commit", self._commit),
            (self.engine, "rollback", self._rollback),
        ]
        for target, name, hook in hooks:
            event.listen(target, name, hook)
        try:
            yield self
        finally:
            for target, name, hook in hooks:
                event.remove(target, name, hook)


def test_a_read_on_the_driver_takes_no_session(api: TenantApi, engine: Engine) -> None:
    """The books' reads are on the driver's pool (pokna.ledger.reads): none of the sessions'."""
    wallet = api.wallet(5)
    with _ConnectionUse(engine).listening() as use:
        assert api.balance(wallet) == 5
        assert_problem(api.get("/v1/accounts/acct_nobody"), 404)
    assert use.checkouts == 0


def test_an_idempotent_post_takes_no_session(api: TenantApi, engine: Engine) -> None:
    """Of the sessions' pool: a keyed admin write (opening a wallet, pokna.api.keyed_writes) and a deposit
    take none of its connections: both are on the driver's pool from end to end."""
    wallet = api.wallet()
    with _ConnectionUse(engine).listening() as use:
        opened = api.post("/v1/accounts", {"external_id": "once"}, headers={KEY_HEADER: "open"})
        assert opened.status_code == 201, opened.text
        again = api.post("/v1/accounts", {"external_id": "once"}, headers={KEY_HEADER: "open"})
        assert (again.headers[REPLAYED], again.json()) == ("true", opened.json())
        paid = api.post(f"/v1/accounts/{wallet}/deposits", {"amount": 5}, headers={KEY_HEADER: "pay"})
        assert paid.status_code == 201, paid.text
        again = api.post(f"/v1/accounts/{wallet}/deposits", {"amount": 5}, headers={KEY_HEADER: "pay"})
        assert again.headers[REPLAYED] == "true"
    assert use.checkouts == 0
    assert api.balance(wallet) == 5


def test_the_streams_take_no_session(api: TenantApi, engine: Engine) -> None:
    """The ledger export (200, and a 422 before its first byte) and the audit bundle read on the driver too."""
    api.wallet(5)
    with _ConnectionUse(engine).listening() as use:
        exported = api.get("/v1/ledger/export")
        assert exported.status_code == 200, exported.text
        assert_problem(api.get("/v1/ledger/export?from_seq=1"), 422)  # a seq without its chain
        bundle = api.get("/v1/audit/bundle")
        assert bundle.status_code == 200, bundle.text
    assert use.checkouts == 0
