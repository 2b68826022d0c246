"""One error style for every command: `error: <what is wrong> (<what to do>)`, one line on stderr.

Exit codes: 1 a failure, 2 a usage error: a wrong option or argument, an id among them (a tenant, an API
key or a migration that does not exist), 130 interrupted (Ctrl-C: 128 + SIGINT, as a shell reports it). The offline verifiers keep their own answers (VALID 0, INVALID 1,
UNUSABLE INPUT 2), which they print themselves.

`describe` turns whatever a command raised into that one line. It recognises an exception by its class
only when that class's module is already loaded (an exception cannot be of a class nobody imported), so
reporting an error never imports SQLAlchemy, Alembic or pydantic into a command that had no need of them.
"""

from __future__ import annotations

import sys
from typing import Any

EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
TRACEBACK_ENV = "POKNA_TRACEBACK"  # set to 1 to see the traceback of an unexpected error


class CommandError(Exception):
    """What a command says when it cannot do what was asked: what is wrong, and what to do about it."""

    def __init__(self, what: str, hint: str | None = None, exit_code: int = EXIT_FAILURE) -> None:
        super().__init__(f"{what} ({hint})" if hint else what)
        self.exit_code = exit_code


def _is(error: BaseException, module: str, name: str) -> bool:
    found: Any = getattr(sys.modules.get(module), name, None)
    return isinstance(found, type) and issubclass(found, BaseException) and isinstance(error, found)


def is_database_error(error: BaseException) -> bool:
    """SQLAlchemy's wrapper of a driver error, or the driver's own (the commands on psycopg's pool)."""
    return _is(error, "sqlalchemy.exc", "DBAPIError") or _is(error, "psycopg", "Error")


def first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), text.strip())


def describe(error: BaseException) -> tuple[str, int] | None:
    """The one line (without `error: `) and the exit code for `error`, or None if it is a bug. A database
    error is the root group's to describe (`is_database_error`, pokna.cli.database_errors: it imports
    Alembic, so only that path pays for it)."""
    if isinstance(error, CommandError):
        return str(error), error.exit_code
    if _is(error, "pokna.settings", "SettingsError") or _is(error, "pokna.service_keys", "ServiceKeyError"):
        return str(error), EXIT_FAILURE
    if (
        _is(error, "pokna.db.embedded", "EmbeddedDatabaseError")
        or _is(error, "pokna.db.migrate", "NotTheCoordinator")
        or _is(error, "pokna.db.migrate", "NewerSchema")
    ):
        return str(error), EXIT_FAILURE
    if _is(error, "pokna.errors", "PoknaError"):
        return first_line(str(error)), EXIT_FAILURE
    if _is(error, "alembic.util.exc", "CommandError"):
        # A revision Alembic cannot resolve is the one given: the database's own, when unknown to this
        # release, was answered before (pokna.db.migrate.NewerSchema). An id that does not exist: exit 2.
        unresolved = error.__cause__ is not None and _is(
            error.__cause__, "alembic.script.revision", "ResolutionError"
        )
        return (
            f"{first_line(str(error))} (`pokna db current` shows the database's revision; "
            "give a revision id, head, base or a step such as -1)",
            EXIT_USAGE if unresolved else EXIT_FAILURE,
        )
    if _is(error, "sqlalchemy.exc", "ArgumentError") or _is(error, "pokna.db.backend", "UnsupportedDatabase"):
        return (
            f"POKNA_DATABASE_URL is not a database URL Pokna can use: {first_line(str(error))} "
            "(e.g. postgresql+psycopg://pokna:secret@db:5432/pokna, or unset for the embedded PostgreSQL in POKNA_DATA_DIR)",
            EXIT_FAILURE,
        )
    if isinstance(error, OSError) and error.filename is not None:
        return (
            f"cannot use {error.filename}: {error.strerror or error} "
            "(check the path and its permissions; POKNA_DATA_DIR says where Pokna keeps its files)",
            EXIT_FAILURE,
        )
    return None


def unexpected(error: BaseException) -> str:
    return (
        f"unexpected {type(error).__name__}: {first_line(str(error))} "
        f"(a bug in pokna; run again with {TRACEBACK_ENV}=1 to see where)"
    )
