"""Typed domain errors. Each has a stable `code`; one handler turns any of them into problem+json."""

from __future__ import annotations

from typing import Any, ClassVar


class PoknaError(Exception):
    code: ClassVar[str] = "error"
    status: ClassVar[int] = 400
    title: ClassVar[str] = "Request failed"

    def __init__(self, detail: str, **extensions: Any) -> None:
        super().__init__(detail)
        self.detail = detail
        self.extensions = extensions


class NotFound(PoknaError):
    code = "not_found"
    status = 404
    title = "Not found"


class Conflict(PoknaError):
    code = "conflict"
    status = 409
    title = "Conflict"


class Unauthorized(PoknaError):
    code = "unauthorized"
    status = 401
    title = "Unauthorized"
