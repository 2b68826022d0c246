"""Checks the API tests share: the problem+json shape, and proof that a refused request wrote nothing."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from pokna.db.models import (
    Account,
    ApiKey,
    Game,
    GameEvent,
    GameRoll,
    GameSeat,
    GameTable,
    IdempotencyRecord,
    JournalPosting,
    JournalTransaction,
    LedgerCheckpoint,
    LedgerHead,
    Tenant,
    WebhookDelivery,
    WebhookEndpoint,
    WebhookEvent,
)

PROBLEM_JSON = "application/problem+json"
_COUNTED = (
    Account,
    ApiKey,
    Game,
    GameEvent,
    GameRoll,
    GameSeat,
    GameTable,
    IdempotencyRecord,
    JournalPosting,
    JournalTransaction,
    LedgerCheckpoint,
    LedgerHead,
    Tenant,
    WebhookDelivery,
    WebhookEndpoint,
    WebhookEvent,
)


def assert_problem(response: Any, status: int, code: str | None = None) -> dict[str, Any]:
    """An RFC 9457 document with this status (and code), whatever else it says."""
    assert response.status_code == status, f"{response.status_code} != {status}: {response.text}"
    assert response.headers["content-type"] == PROBLEM_JSON, response.headers
    problem: dict[str, Any] = response.json()
    assert problem["status"] == status
    if code is not None:
        assert problem["code"] == code, problem
    assert problem["type"] == f"https://pokna.dev/problems/{problem['code']}"
    assert problem["title"]
    return problem


def invalid_params(problem: dict[str, Any]) -> dict[str, str]:
    """`invalid_params` as name -> pointer; each pointer must agree with its dotted name (RFC 6901)."""
    params = problem.get("invalid_params") or []
    assert params, f"the problem names no field: {problem}"
    named: dict[str, str] = {}
    for param in params:
        assert param["reason"]
        named[param["name"]] = param["pointer"]
    return named


def assert_names_field(problem: dict[str, Any], name: str) -> None:
    """The problem names `name` (e.g. `body.player_account_ids.1`) with the matching JSON pointer."""
    named = invalid_params(problem)
    assert name in named, f"{name} not in {sorted(named)}"
    location = name.split(".")[1:]
    assert named[name] == ("/" + "/".join(location) if location else "")


def database_state(sessions: sessionmaker[Session]) -> dict[str, Any]:
    """Everything a request could write: rows per table, every balance, game versions and chain heads."""
    with sessions() as session:
        counts = {
            model.__tablename__: session.scalar(select(func.count()).select_from(model)) for model in _COUNTED
        }
        balances = {row.id: row.balance for row in session.execute(select(Account.id, Account.balance))}
        games = {
            row.id: (row.status, row.version)
            for row in session.execute(select(Game.id, Game.status, Game.version))
        }
        heads = {
            row.tenant_id: (row.last_seq, row.last_hash)
            for row in session.execute(
                select(LedgerHead.tenant_id, LedgerHead.last_seq, LedgerHead.last_hash)
            )
        }
        claims = {
            (row.tenant_id, row.key): row.response_status
            for row in session.execute(
                select(IdempotencyRecord.tenant_id, IdempotencyRecord.key, IdempotencyRecord.response_status)
            )
        }
    return {"counts": counts, "balances": balances, "games": games, "heads": heads, "claims": claims}
