"""Typed, path-aware reads from parsed JSON, so a malformed document is refused naming the exact field."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pokna_verify.fairness.errors import MalformedProofError


class JsonReader:
    def __init__(self, value: object, path: str = "$") -> None:
        if not isinstance(value, Mapping):
            raise MalformedProofError(path, "expected an object")
        self.value: Mapping[str, Any] = value
        self.path = path

    def _get(self, name: str) -> object:
        if name not in self.value:
            raise MalformedProofError(f"{self.path}.{name}", "missing")
        return self.value[name]

    def string(self, name: str) -> str:
        value = self._get(name)
        if not isinstance(value, str):
            raise MalformedProofError(f"{self.path}.{name}", f"expected a string, got {_kind(value)}")
        return value

    def integer(self, name: str) -> int:
        value = self._get(name)
        if isinstance(value, bool) or not isinstance(value, int):
            raise MalformedProofError(f"{self.path}.{name}", f"expected an integer, got {_kind(value)}")
        return value

    def optional_integer(self, name: str, default: int | None) -> int | None:
        """An integer, or `default` when the field is absent or null (a field added to a later protocol)."""
        if self.value.get(name) is None:
            return default
        return self.integer(name)

    def optional_string(self, name: str) -> str | None:
        """A string, or None when the field is absent or null (a field added to a later protocol)."""
        if self.value.get(name) is None:
            return None
        return self.string(name)

    def seat_or_pot(self, name: str) -> int | str:
        """A transfer's party: a seat number, "pot", or "revenue" (the operator's, paid only a rake)."""
        value = self._get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if value in ("pot", "revenue"):
            return str(value)
        raise MalformedProofError(
            f"{self.path}.{name}", f'expected a seat number, "pot" or "revenue", got {value!r}'
        )

    def object(self, name: str) -> JsonReader:
        return JsonReader(self._get(name), f"{self.path}.{name}")

    def raw_object(self, name: str) -> Mapping[str, Any]:
        return self.object(name).value

    def objects(self, name: str) -> list[JsonReader]:
        value = self._get(name)
        if not isinstance(value, list):
            raise MalformedProofError(f"{self.path}.{name}", f"expected a list, got {_kind(value)}")
        return [JsonReader(item, f"{self.path}.{name}[{index}]") for index, item in enumerate(value)]


def _kind(value: object) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "a list"}.get(
        type(value), "an object"
    )
