"""Tenant and API-key lifecycle (`pokna tenants ...`), on an async connection. Secrets are shown once and
stored only as SHA-256 digests."""

from __future__ import annotations

import secrets
import unicodedata
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from psycopg import AsyncConnection

from pokna.db.types import new_id, utc_now
from pokna.errors import NotFound
from pokna.tenants.authentication import key_digest

KEY_PREFIX = "pk_"


@dataclass(frozen=True)
class TenantRecord:
    id: str
    name: str
    created_at: datetime


@dataclass(frozen=True)
class ApiKeyRecord:
    id: str
    tenant_id: str
    created_at: datetime
    revoked_at: datetime | None


@dataclass(frozen=True)
class IssuedKey:
    key_id: str
    tenant_id: str
    secret: str


# Unicode's control (Cc), format (Cf: direction marks and overrides, zero-width marks, the soft hyphen) and
# line and paragraph separator (Zl, Zp) characters.
_HIDDEN = frozenset({"Cc", "Cf", "Zl", "Zp"})
# And the rest of Unicode's default-ignorable code points (DerivedCoreProperties.txt), shown as nothing though
# of another category: the combining grapheme joiner, the Hangul fillers, the variation selectors, ...
_IGNORABLE = (
    (0x034F, 0x034F),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0xE0000, 0xE0FFF),
)


def _invisible(character: str) -> bool:
    code = ord(character)
    return unicodedata.category(character) in _HIDDEN or any(low <= code <= high for low, high in _IGNORABLE)


_TENANT = "SELECT id, name, created_at FROM tenant"
_API_KEY = "SELECT id, tenant_id, created_at, revoked_at FROM api_key"
_TENANT_IDS = "SELECT id FROM tenant ORDER BY id"


async def create_tenant(connection: AsyncConnection[Any], name: str) -> TenantRecord:
    name = name.strip()
    if not name or len(name) > 200:
        raise ValueError(f"a tenant name is 1-200 characters, not {len(name)}")
    if hidden := sorted({f"U+{ord(c):04X}" for c in name if _invisible(c)}):
        # `pokna tenants list` prints names as they are: an escape sequence would drive the terminal, and a
        # direction override (U+202E) or a zero-width mark would make one name read as another.
        raise ValueError(
            f"a tenant name holds no control or invisible formatting characters, not {', '.join(hidden)}"
        )
    tenant = TenantRecord(new_id("ten"), name, utc_now())
    await connection.execute(
        "INSERT INTO tenant (id, name, created_at) VALUES (%(id)s, %(name)s, %(created_at)s)", vars(tenant)
    )
    return tenant


def _tenant(row: Any) -> TenantRecord:
    return TenantRecord(row[0], row[1], row[2].astimezone(UTC))


def _api_key(row: Any) -> ApiKeyRecord:
    """The row's times in UTC, whatever the connection's TimeZone."""
    return ApiKeyRecord(row[0], row[1], row[2].astimezone(UTC), row[3] and row[3].astimezone(UTC))


async def get_tenant(connection: AsyncConnection[Any], tenant_id: str) -> TenantRecord:
    row = await (await connection.execute(_TENANT + " WHERE id = %s", (tenant_id,))).fetchone()
    if row is None:
        raise NotFound(f"no tenant {tenant_id}")
    return _tenant(row)


async def list_tenants(connection: AsyncConnection[Any]) -> list[TenantRecord]:
    return [
        _tenant(row)
        for row in await (await connection.execute(_TENANT + " ORDER BY created_at, id")).fetchall()
    ]


async def tenant_ids_async(connection: AsyncConnection[Any]) -> list[str]:
    """Every tenant's id, in order: what background work goes through one tenant at a time (a tenant's rows
    live on one node of a distributed database, docs/scaling.md). Read from `tenant`, a reference table."""
    return [str(row[0]) for row in await (await connection.execute(_TENANT_IDS)).fetchall()]


async def issue_api_key(connection: AsyncConnection[Any], tenant_id: str) -> IssuedKey:
    await get_tenant(connection, tenant_id)
    secret = KEY_PREFIX + secrets.token_urlsafe(32)
    key_id = new_id("key")
    await connection.execute(
        "INSERT INTO api_key (id, tenant_id, secret_sha256, created_at) VALUES (%s, %s, %s, %s)",
        (key_id, tenant_id, key_digest(secret), utc_now()),
    )
    return IssuedKey(key_id=key_id, tenant_id=tenant_id, secret=secret)


async def list_api_keys(connection: AsyncConnection[Any], tenant_id: str) -> list[ApiKeyRecord]:
    query = _API_KEY + " WHERE tenant_id = %s ORDER BY created_at, id"
    return [_api_key(row) for row in await (await connection.execute(query, (tenant_id,))).fetchall()]


async def revoke_api_key(connection: AsyncConnection[Any], key_id: str) -> ApiKeyRecord:
    """The key, revoked from now on; revoking a revoked key keeps its first revocation's time."""
    revoke = (
        "UPDATE api_key SET revoked_at = coalesce(revoked_at, %s) WHERE id = %s "
        "RETURNING id, tenant_id, created_at, revoked_at"
    )
    row = await (await connection.execute(revoke, (utc_now(), key_id))).fetchone()
    if row is None:
        raise NotFound(f"no API key {key_id}")
    return _api_key(row)
