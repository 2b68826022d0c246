"""Ids are version-4 UUIDs in hex, as `uuid.uuid4().hex` makes them (pokna.db.types.uuid4_hex)."""

from __future__ import annotations

import re
import uuid

from pokna.db.types import new_id, uuid4_hex


def test_an_id_is_a_random_version_4_uuid_in_hex() -> None:
    drawn = {uuid4_hex() for _ in range(2_000)}
    assert len(drawn) == 2_000
    for text in drawn:
        parsed = uuid.UUID(text)
        assert (parsed.hex, parsed.version, parsed.variant) == (text, 4, uuid.RFC_4122)
    # every other bit is drawn: across 2,000 ids each of the 122 random bits was seen both ways
    numbers = [uuid.UUID(text).int for text in drawn]
    fixed = (0xF << 76) | (0x3 << 62)
    random_bits = [bit for bit in range(128) if not (fixed >> bit) & 1]
    assert len(random_bits) == 122
    assert all(0 < sum((number >> bit) & 1 for number in numbers) < len(numbers) for bit in random_bits)
    assert re.fullmatch(r"txn_[0-9a-f]{32}", new_id("txn"))
