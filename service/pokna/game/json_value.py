"""JSON-shaped values, so events, errors and snapshots can cross the API and the verifier unchanged."""

from __future__ import annotations

import dataclasses
from enum import Enum
from typing import TypeAlias

JSONValue: TypeAlias = "str | int | float | bool | list[JSONValue] | dict[str, JSONValue] | None"
JSONObject: TypeAlias = "dict[str, JSONValue]"


def to_json_value(value: object) -> JSONValue:
    """Lower enums, tuples and nested dataclasses to plain JSON so no caller needs a custom encoder."""
    if isinstance(value, Enum):
        raw = value.value
        if not isinstance(raw, str | int):
            raise TypeError(f"enum {value!r} has no JSON form")
        return raw
    if value is None or isinstance(value, str | int | bool):
        return value
    if isinstance(value, tuple | list):
        return [to_json_value(item) for item in value]
    if isinstance(value, dict):
        return {str(key): to_json_value(item) for key, item in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: to_json_value(getattr(value, field.name)) for field in dataclasses.fields(value)}
    raise TypeError(f"{type(value).__name__} has no JSON form")
