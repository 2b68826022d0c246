"""A request body's numbers are read as written, not as the doubles `json.loads` makes of them.

`json.loads` reads `0.99999999999999999` as the double 1.0, and an integer field that takes a whole double
(`pokna.api.fields.WHOLE_NUMBER`: 10.0 and 1e1 are integers to JSON Schema) would take it as 1: a client
that meant a fraction would have one credit deposited (issue 46, L4). So every route that reads a JSON body
reads it with `parse_number`, which marks a number whose double is whole with the integer it is as written,
if it is one; an integer field decides on that. Anywhere else (a posting's free-form `metadata`) the number
is still the float it always was."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Coroutine
from decimal import Decimal
from typing import Any

from fastapi import Request, Response
from fastapi.routing import APIRoute


class WholeDouble(float):
    """A JSON number whose double is whole. `exact` is the integer the number is as written, or None if it
    is no integer (a fraction closer to a whole number than a double can tell apart)."""

    exact: int | None


def parse_number(literal: str) -> float:
    """`json.loads`'s `parse_float`: the double, as a `WholeDouble` if it is whole. A number that is whole
    as written always has a whole double (doubles round monotonically, and every integer below 2**53 is one),
    so only those need the literal's own verdict. The double is finite, so the exact integer has at most
    309 digits however the literal is spelled."""
    double = float(literal)
    if not (math.isfinite(double) and double.is_integer()):
        return double
    written = Decimal(literal)
    number = WholeDouble(double)
    number.exact = int(written) if written == written.to_integral_value() else None
    return number


class WrittenNumbersRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            self._json = json.loads(await self.body(), parse_float=parse_number)
        return self._json


class WrittenNumbersRoute(APIRoute):
    """The route class of every router that reads a JSON body (`APIRouter(route_class=...)`): FastAPI reads
    the body with `request.json()`, which here is `WrittenNumbersRequest`'s."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handle = super().get_route_handler()

        async def handle_written(request: Request) -> Response:
            return await handle(WrittenNumbersRequest(request.scope, request.receive))

        return handle_written
