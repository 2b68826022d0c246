"""JSON-shaped values, so events, errors and snapshots can cross the API and the verifier unchanged."""

from __future__ import annotations

import dataclasses
from enum import Enum
from typing import TypeAlias

JSONValue: TypeAlias = "str | int | float | bool | list[JSONValue] | dict[str, JSONValue] | None"
JSONObject: TypeAlias = "dict[str, JSONValue]"


def to_json_value(value: object) -> JSONValue:
    """Lower enums, tuples and nested dataclasses to plain JSON so no caller needs a custom encoder."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:  # most values: no isinstance chain
        return value  # type: ignore[return-value]
    if isinstance(value, Enum):
        raw = value.value
        if not isinstance(raw, str | int):
            raise TypeError(f"enum {value!r} has no JSON form")
        return raw
    if isinstance(value, str | int | bool):
        return value
    if isinstance(value, tuple | list):
        return [to_json_value(item) for item in value]
    if isinstance(value, dict):
        return {str(key): to_json_value(item) for key, item in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {name: to_json_value(getattr(value, name)) for name in field_names(kind)}
    raise TypeError(f"{kind.__name__} has no JSON form")


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def field_names(kind: type) -> tuple[str, ...]:
    """A dataclass's field names, in order, remembered per class (dataclasses.fields builds them anew
    on every call). Classes are immutable facts, so the memo can never be wrong."""
    names = _FIELD_NAMES.get(kind)
    if names is None:
        names = _FIELD_NAMES[kind] = tuple(field.name for field in dataclasses.fields(kind))
    return names
