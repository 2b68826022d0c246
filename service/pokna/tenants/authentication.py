"""API-key authentication, for every path: the one statement that checks a key, the one memory of keys a
process keeps, and the rule that memory obeys; and a read sent beside the check (`read_beside`).

A key is looked up by its SHA-256 (`key_digest`; only the digest is stored) among the keys not revoked,
in the database, on every request: a key revoked a moment ago is refused by the next request in every
process. A request checks it on its connection, as a statement of its own (`authenticate`) or beside the
statements that need its tenant (`check`, `read_beside`).

That last form is why the process remembers each key's tenant: on Citus a statement is routed by a tenant
bound as a value (docs/scaling.md), so the claim of an Idempotency-Key or the lock of a game is sent under
the tenant the process remembers, beside the key's check. The memory is a routing hint and never
authenticates: a key whose check finds it revoked (or, were a key's tenant ever to change, another
tenant's) is forgotten, what was sent under the remembered tenant is undone by the caller, and the
request is refused (or sent again under the key's tenant). A key not remembered yet costs one round trip
more, once.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from psycopg import AsyncConnection, AsyncCursor

from pokna.errors import Unauthorized

_AUTHENTICATE = "SELECT tenant_id FROM api_key WHERE secret_sha256 = %(secret_sha256)s AND revoked_at IS NULL"


def key_digest(secret: str) -> str:
    """How an API key is stored and looked up: its SHA-256, in hex."""
    return hashlib.sha256(secret.encode()).hexdigest()


_REMEMBERED: dict[str, str] = {}
"""The tenant of each key this process has authenticated, by the key's digest (a routing hint only)."""
_REMEMBERED_AT_MOST = 100_000


def _authenticated(digest: str, row: Any) -> str:
    """The check's row: the key's tenant, remembered, or Unauthorized (unknown and revoked keys look
    the same to the caller)."""
    if row is None:
        _REMEMBERED.pop(digest, None)
        raise Unauthorized("unknown or revoked API key")
    if len(_REMEMBERED) >= _REMEMBERED_AT_MOST:  # bounded: a key nobody sends again is never forgotten
        _REMEMBERED.clear()
    tenant_id: str = row[0]
    _REMEMBERED[digest] = tenant_id
    return tenant_id


async def authenticate(connection: AsyncConnection[Any], digest: str) -> str:
    """The key's tenant, in one statement of its own (one round trip)."""
    row = await (await connection.execute(_AUTHENTICATE, {"secret_sha256": digest})).fetchone()
    return _authenticated(digest, row)


@dataclass(frozen=True)
class KeyCheck:
    """A key's check, sent in the caller's pipeline. Until it is synced the caller may send the
    statements that need the tenant under `remembered` (when not None), in the same round trip."""

    digest: str
    remembered: str | None
    _checked: AsyncCursor[Any]

    async def tenant(self, undo: Callable[[str], Awaitable[None]] | None = None) -> str:
        """Once synced: the key's tenant, or Unauthorized. When that is not `remembered`, `undo` is
        first given the remembered tenant, to take back what the caller sent under it; a caller then
        sends its statements again under the tenant answered here."""
        row = await self._checked.fetchone()
        if self.remembered is not None and (row is None or row[0] != self.remembered) and undo is not None:
            await undo(self.remembered)
        return _authenticated(self.digest, row)


async def check(connection: AsyncConnection[Any], digest: str) -> KeyCheck:
    """The key's check, queued in the connection's pipeline, with the tenant remembered for it."""
    remembered = _REMEMBERED.get(digest)
    checked = await connection.execute(_AUTHENTICATE, {"secret_sha256": digest})
    return KeyCheck(digest, remembered, checked)


Queued = TypeVar("Queued")


async def read_beside(
    connection: AsyncConnection[Any], digest: str, queue: Callable[[str], Awaitable[Queued]]
) -> tuple[str, Queued]:
    """The key's tenant and what `queue(tenant)` queued under it (its cursors, sent and ready to fetch):
    with the key's check in one round trip when the process remembers the key's tenant, one more when it
    does not (or when the key's tenant is not the one remembered). A read writes nothing, so nothing sent
    under a wrong tenant needs undoing: it is sent again under the key's own, or the key is refused."""
    async with connection.pipeline():  # its exit syncs: the one round trip
        key_check = await check(connection, digest)
        remembered = key_check.remembered
        queued = None if remembered is None else await queue(remembered)
    tenant_id = await key_check.tenant()
    if queued is None or tenant_id != remembered:
        async with connection.pipeline():
            queued = await queue(tenant_id)
    return tenant_id, queued
