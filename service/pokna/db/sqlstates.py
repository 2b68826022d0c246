"""Every SQLSTATE Pokna reacts to, named once, and what a database error means: the one place.

A database error reaches the service as psycopg's own (`psycopg.Error`: every request, command and job is
on the driver; only Alembic's commands speak SQLAlchemy, pokna.cli.database_errors). `sqlstate_of` reads
the code, so no caller looks inside an error itself.

Pokna's own codes (class PK, raised by the functions in service/pokna/sql/):
- `LEDGER_REFUSED` (PK402): ledger_move() when ledger_post() refused a deposit or withdrawal; the
  reason, as JSON in the error's detail (`detail_of`), becomes the ledger's typed error
  (pokna.ledger.moving). Nothing was written.
- `STALE_BALANCES` (PK409): game_write() when a wallet moved after the game was read; the dealer decides
  again (pokna.dealer.writes). Not an error a client sees.
- `WALLET_HELD` (PK423): money would leave a wallet a waiting beacon roll holds (ledger_refuse_held_debit.sql),
  on any path: `refusal` answers WalletHeld.
- `ROUND_TOO_NEAR` (PK425): beacon_roll_write() when an acceptance would commit within 50 ms of its round's
  due time; the dealer decides again once the round is due. Not an error a client sees.
PostgreSQL's:
- `LOCK_NOT_AVAILABLE` (55P03): a NOWAIT lock refused (an idempotency claim held by a request still running),
  caught as psycopg's `LockNotAvailable` where the claim is read (pokna.idempotency.service); and a migration
  that gave up waiting for its lock (`lock_timeout`, 0025_posting_created_at), which `pokna db upgrade`
  explains (pokna.cli.db).
- `UNIQUE_VIOLATION` (23505): a wallet opened for an external id a concurrent request took first
  (pokna.ledger.accounts_aio.open_wallet).
- the outages (`unavailable_reason`): the database cannot serve now, whatever the request was; a 503
  `database_unavailable` with Retry-After (pokna.api.problems), never a 500.
Citus's, met while a tenant's shards move to another worker (`SHARD_MOVING`, docs/scaling.md "Moving a
tenant"): a statement routed by the metadata of a moment ago, refused on the node where the shard no longer
is. Known by code and message together, since one of them is XX000, PostgreSQL's code for any internal
error: also a 503 with Retry-After; the retry is routed to the shard's new place.

`refusal(error)` is the typed error a database error means wherever it is met (WalletHeld,
DatabaseUnavailable), or None: the HTTP handler and the background jobs ask it.
What only one domain can say (a ledger refusal's reason, a stale read) that domain says, keyed by the code
named here.
"""

from __future__ import annotations

import json
from typing import Any

import psycopg

from pokna.errors import DatabaseUnavailable, PoknaError, WalletHeld

LEDGER_REFUSED = "PK402"
STALE_BALANCES = "PK409"
WALLET_HELD = "PK423"
ROUND_TOO_NEAR = "PK425"
UNIQUE_VIOLATION = "23505"
LOCK_NOT_AVAILABLE = "55P03"

# SQLSTATE classes and codes that say the server cannot do the work now, whatever the request was.
_UNAVAILABLE_CLASSES = ("08",)  # connection exception
_UNAVAILABLE_STATES = {
    "25006": "the database is read-only (a standby, or the primary was demoted)",
    "53300": "the database has no connection slot free",
    "53400": "the database hit a configured limit",
    "57014": "the statement ran past the configured statement timeout",
    "57P01": "the database is shutting down",
    "57P02": "the database crashed",
    "57P03": "the database is starting up or shutting down",
    "57P05": "the database closed an idle session",
    "58030": "the database hit an I/O error",
}

# (SQLSTATE, primary message) of Citus 14's errors a shard move causes for a moment, nothing else.
SHARD_MOVING = {
    # multi_executor.c, EnsureTaskExecutionAllowed: a function call delegated to the shard's old worker ran
    # its statements after the switch-over, when the shard was another worker's (no errcode: XX000).
    ("XX000", "cannot execute a distributed query from a query on a shard"),
    # citus_custom_scan.c, EnsureAnchorShardsInJobExist: a statement planned before a shard was replaced.
    ("40001", "shard for the given value does not exist"),
}


def sqlstate_of(error: BaseException) -> str | None:
    """The SQLSTATE the server answered with; None when it said nothing (a connection that failed first, an
    error that is not the database's)."""
    sqlstate = getattr(error, "sqlstate", None)
    return sqlstate if isinstance(sqlstate, str) and sqlstate else None


def message_of(error: BaseException) -> str:
    """The server's primary message (what a RAISE in service/pokna/sql/ says), never the statement."""
    diag = getattr(error, "diag", None)
    return str(getattr(diag, "message_primary", None) or error)


def detail_of(error: BaseException) -> dict[str, Any]:
    """The JSON a function in service/pokna/sql/ put in its error's DETAIL (empty when none)."""
    diag = getattr(error, "diag", None)
    detail = getattr(diag, "message_detail", None)
    found = json.loads(detail) if detail else {}
    return found if isinstance(found, dict) else {}


def refusal(error: BaseException) -> PoknaError | None:
    """The typed error a database error means on any path, or None (then it is the caller's to name, or a
    bug)."""
    if sqlstate_of(error) == WALLET_HELD:
        return WalletHeld(message_of(error))
    reason = unavailable_reason(error)
    if reason is not None:
        return DatabaseUnavailable(f"{reason}; nothing was committed")
    return None


def unavailable_reason(error: BaseException) -> str | None:
    """Why the database cannot serve the request now, or None when `error` is not that (a bug, a
    constraint, bad SQL): one short sentence, never the statement or its parameters.

    From PostgreSQL's SQLSTATE where there is one, and for a connection that failed before the server said
    anything (psycopg raises `OperationalError` with no SQLSTATE), from the error's class."""
    if not isinstance(error, psycopg.Error):
        return None
    sqlstate = error.sqlstate
    if sqlstate:
        if sqlstate[:2] in _UNAVAILABLE_CLASSES:
            return "the connection to the database failed"
        if (sqlstate, error.diag.message_primary) in SHARD_MOVING:
            return "the tenant's data was moving to another database node"
        return _UNAVAILABLE_STATES.get(sqlstate)
    if isinstance(error, psycopg.OperationalError | psycopg.InterfaceError):
        return "cannot reach the database"  # refused, unreachable, closed: before the server said anything
    return None
