"""A hot route's request goes straight to the router that holds it, without the scan of every route before.

The app's router tries its routes in order, and each included router tries each of its own, so a game
action was matched against the health, accounts and ledger routes first (each try a regular expression
and some bookkeeping of FastAPI's), and the games router's routes then tried again once it was chosen:
about 30 µs of a request's CPU. `install` puts a table of the hot routes (those `DirectRoute` answers
directly: a game's creation and actions, a table's round, deposits and withdrawals) in front of the
router: a request whose method and path one of them takes fully is handed to the included router that
holds it, which picks its route as always. Everything else goes through the router as before.

That is the router's own choice whenever no route before that included router could take the same
request, which is what `install` checks when it builds the table: a hot route is only in it if no route
of the routers before its own starts with a literal path compatible with its own (neither a prefix of the
other); a route whose literal start is unknown (a host, say) keeps every hot route after it out of the
table. A route's match is FULL exactly when its path expression matches and its methods hold the
request's method, as Starlette's `Route.matches` decides."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI
from fastapi.routing import APIRouter, _IncludedRouter
from starlette._utils import get_route_path
from starlette.routing import BaseRoute, Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from pokna.api.direct_route import DirectRoute


@dataclass(frozen=True)
class _Hot:
    path_regex: Any
    methods: frozenset[str]
    holder: _IncludedRouter


class HotPaths:
    """The router's ASGI entry (`Router.middleware_stack`), with the table of hot routes in front."""

    def __init__(self, router: APIRouter, routed: ASGIApp, hot: list[_Hot]) -> None:
        self.router = router
        self.routed = routed
        self.hot = tuple(hot)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and "fastapi.telemetry" not in scope:
            method = scope["method"]
            path = get_route_path(scope)
            for hot in self.hot:
                if method in hot.methods and hot.path_regex.match(path):
                    if "router" not in scope:  # as the router's own `app` does first
                        scope["router"] = self.router
                    await hot.holder.handle(scope, receive, send)
                    return
        await self.routed(scope, receive, send)


def install(app: FastAPI) -> None:
    """Once every router is included. Does nothing if the router has anything it would have to apply
    before choosing a route (form limits) or no hot route qualifies."""
    router = app.router
    if router.form_limits or not isinstance(router, APIRouter):
        return
    hot: list[_Hot] = []
    before: list[str | None] = []  # the literal starts of every route tried before
    for top in router.routes:
        if isinstance(top, _IncludedRouter):
            for context in top.effective_route_contexts():
                original = context.original_route
                start = _literal_start(context.path_format)
                if isinstance(original, DirectRoute) and original.direct and _clear(start, before):
                    hot.append(_Hot(context.path_regex, frozenset(context.methods or ()), top))
        before.extend(_starts(top))
    if hot:
        router.middleware_stack = HotPaths(router, router.middleware_stack, hot)


def _starts(route: BaseRoute) -> Iterator[str | None]:
    """The literal start of every path `route` may take; None when it is not known."""
    if isinstance(route, _IncludedRouter):
        for context in route.effective_route_contexts():
            yield _literal_start(getattr(context, "path_format", None))
    elif isinstance(route, Route | Mount):
        yield _literal_start(route.path_format)
    else:
        yield None


def _literal_start(path_format: str | None) -> str | None:
    return None if not path_format else path_format.split("{", 1)[0]


def _clear(start: str | None, before: list[str | None]) -> bool:
    return start is not None and all(
        other is not None and not (other.startswith(start) or start.startswith(other)) for other in before
    )
