"""Whether an error means "the database cannot serve this now" (retry later) rather than a bug.

A database that is stopped, restarting, unreachable, read-only (a standby that has not been promoted),
out of connections, or too busy to answer within the configured waits gives the client a 503 with
`Retry-After` (`pokna.api.problems`), never a 500. Everything else stays a 500.

The answer comes from what the driver reports: PostgreSQL's SQLSTATE where there is one (psycopg), and
for a connection that failed before the server said anything
(psycopg raises `OperationalError` with no SQLSTATE), the error's class.
"""

from __future__ import annotations

import psycopg
from sqlalchemy import exc

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


def unavailable_reason(error: BaseException) -> str | None:
    """Why the database cannot serve the request now, or None when `error` is not that (a bug, a
    constraint, bad SQL): one short sentence, never the statement or its parameters."""
    if isinstance(error, exc.TimeoutError):
        return "no database connection became free within the configured pool wait"
    if isinstance(error, psycopg.Error):  # the async hot paths use the driver without SQLAlchemy
        return _driver_reason(error, error)
    if isinstance(error, exc.DisconnectionError):
        return "the connection to the database was lost"
    if not isinstance(error, exc.DBAPIError):
        return None
    if error.connection_invalidated:
        return "the connection to the database was lost"
    return _driver_reason(error.orig, error)


def _driver_reason(original: BaseException | None, error: BaseException) -> str | None:
    sqlstate = getattr(original, "sqlstate", None)
    if isinstance(sqlstate, str) and sqlstate:
        if sqlstate[:2] in _UNAVAILABLE_CLASSES:
            return "the connection to the database failed"
        return _UNAVAILABLE_STATES.get(sqlstate)
    if isinstance(
        error, exc.OperationalError | exc.InterfaceError | psycopg.OperationalError | psycopg.InterfaceError
    ):
        return "cannot reach the database"  # refused, unreachable, closed: before the server said anything
    return None
