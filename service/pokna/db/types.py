from __future__ import annotations

import os
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import DateTime, Dialect, TypeDecorator

from pokna_verify.invariant import of_type


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC in and out: a naive datetime is refused, never guessed."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, _: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime; Pokna stores only timezone-aware UTC")
        return value.astimezone(UTC)

    def process_result_value(self, value: Any, _: Dialect) -> datetime | None:
        if value is None:
            return None
        found = of_type(value, datetime, "a timestamp column's value")
        return found.replace(tzinfo=UTC) if found.tzinfo is None else found.astimezone(UTC)


def utc_now() -> datetime:
    return datetime.now(UTC)


def new_id(prefix: str) -> str:
    """Stripe-style prefixed ids: readable in logs, and a wrong-kind id is obvious at a glance."""
    return f"{prefix}_{uuid4_hex()}"


def uuid4_hex() -> str:
    """`uuid.uuid4().hex`: 16 random bytes with the version (4) and variant (RFC 4122) bits set, in hex,
    without building a `UUID` (its checks cost a few µs, and a game action draws several ids)."""
    raw = bytearray(os.urandom(16))
    raw[6] = raw[6] & 0x0F | 0x40
    raw[8] = raw[8] & 0x3F | 0x80
    return raw.hex()
