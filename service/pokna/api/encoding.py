"""Response bodies to JSON-ready values: FastAPI's `jsonable_encoder` rules, with a fast path for the
pydantic answers, plain dicts, lists and datetimes our services return (a game is encoded on every
action)."""

from __future__ import annotations

from datetime import date, datetime, time
from typing import Any

from fastapi.encoders import jsonable_encoder
from pydantic import BaseModel

_PLAIN = (str, int, bool, float, type(None))


def json_ready(value: Any) -> Any:
    """What `jsonable_encoder(value)` returns (tests/api/test_api_encoding.py holds the two equal), except
    that object keys starting with `_sa` are kept: jsonable_encoder drops them as SQLAlchemy internals,
    which would silently lose a client's own metadata keys. Anything but plain JSON types and datetimes
    is handed to jsonable_encoder. A pydantic model is dumped by pydantic itself, as jsonable_encoder
    dumps it before walking the result again in Python (some 30 times slower for a game)."""
    kind = type(value)
    if kind in _PLAIN:
        return value
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True)
    if kind is dict:
        return {key if type(key) is str else json_ready(key): json_ready(item) for key, item in value.items()}
    if kind is list or kind is tuple:
        return [json_ready(item) for item in value]
    if kind is datetime or kind is date or kind is time:
        return value.isoformat()
    return jsonable_encoder(value)
