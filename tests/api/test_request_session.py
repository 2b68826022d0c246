"""An API process makes no SQLAlchemy engine (pokna.runtime: every route is on psycopg's pool), and a
write whose COMMIT the database refuses answers an error and leaves nothing behind."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, Pool, text
from sqlalchemy.orm import Session, sessionmaker

from pokna.app import create_app
from pokna.runtime import Runtime
from pokna.settings import Settings
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


def test_an_api_process_makes_no_sqlalchemy_engine(settings: Settings, database_url: str) -> None:
    """One pool per process (issue 43): an app built from its settings, started and serving reads, keyed
    writes and their replays, and the streams, has made no SQLAlchemy engine (nor its pool), only
    psycopg's pools (pokna.runtime)."""
    before = _engines()
    runtime = Runtime.from_settings(settings)
    with TestClient(create_app(settings, runtime)) as client:
        api = new_tenant(client, database_url)
        assert client.get("/readyz").status_code == 200
        wallet = api.wallet()
        assert_problem(api.get("/v1/accounts/acct_nobody"), 404)
        for _ in range(2):
            opened = api.post("/v1/accounts", {"external_id": "once"}, headers={KEY_HEADER: "open"})
            assert opened.status_code == 201, opened.text
            paid = api.post(f"/v1/accounts/{wallet}/deposits", {"amount": 5}, headers={KEY_HEADER: "pay"})
            assert paid.status_code == 201, paid.text
        assert (opened.headers[REPLAYED], paid.headers[REPLAYED]) == ("true", "true")
        assert api.balance(wallet) == 5
        assert api.get("/v1/ledger/export").status_code == 200
        assert_problem(api.get("/v1/ledger/export?from_seq=1"), 422)  # a seq without its chain
        assert api.get("/v1/audit/bundle").status_code == 200
        made = _engines() - before
    assert made == set(), "the app made a SQLAlchemy engine"
    assert not [value for value in vars(runtime).values() if isinstance(value, Engine | Pool | sessionmaker)]


def _engines() -> set[int]:
    gc.collect()
    return {id(thing) for thing in gc.get_objects() if isinstance(thing, Engine | Pool)}
