"""A hot route's request goes straight to its route, without the scan of every route before.

The app's router tries its routes in order, and each included router tries each of its own, so a game
action was matched against the health, accounts and ledger routes first (each try a regular expression
and some bookkeeping of FastAPI's), and the games router's routes then tried again once it was chosen:
about 30 µs of a request's CPU. `install` puts a table of the hot routes (those `DirectRoute` answers
directly: a game's creation and actions, a table's round, deposits and withdrawals) in front of the
router. A request whose method and path one of them takes fully is handed to that route's ASGI app (the
one FastAPI built for the route's inclusion: its exception handling, exit stacks and body limit), with
the scope the included router's own choice would have given it (`_selected`); everything else goes
through the router as before.

That is the router's own choice whenever no route before could take the same request, which is what
`install` checks when it builds the table: a hot route is only in it if no route of the routers before
its own starts with a literal path compatible with its own (neither a prefix of the other); a route whose
literal start is unknown (a host, say) keeps every hot route after it out of the table. Within its own
router a route before it must take none of its requests either (`_disjoint`): otherwise, or when its
router is nested in another or applies form limits, or when its router's routes have changed since
(FastAPI then builds their inclusions anew), the request is handed to the included router, which scans
its own routes as always. A route's match is FULL exactly when its path expression matches and its
methods hold the request's method, as Starlette's `Route.matches` decides."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI
from fastapi.routing import (
    _FASTAPI_EFFECTIVE_ROUTE_CONTEXT_KEY,
    _FASTAPI_INCLUDED_ROUTER_KEY,
    APIRouter,
    _get_fastapi_scope,
    _IncludedRouter,
    _update_scope,
)
from starlette._utils import get_route_path
from starlette.routing import BaseRoute, Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from pokna.api.direct_route import DirectRoute


@dataclass(frozen=True)
class _Hot:
    path_regex: Any
    methods: frozenset[str]
    holder: _IncludedRouter
    context: Any
    """The route's effective context (its inclusion) when the request may go straight to it, else None."""
    candidates: list[Any]
    """The holder's routes as built when the table was (`effective_candidates`): rebuilt, a new list."""


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
                    if hot.context is not None and hot.holder.effective_candidates() is hot.candidates:
                        await _selected(hot.holder, hot.context, scope, receive, send)
                    else:
                        await hot.holder.handle(scope, receive, send)
                    return
        await self.routed(scope, receive, send)


async def _selected(
    holder: _IncludedRouter, context: Any, scope: Scope, receive: Receive, send: Send
) -> None:
    """What the included router's `handle` does once its scan has chosen `context`'s route (and what the
    route's `handle` then does for a method it takes): the same scope keys, the same app. Telemetry's
    `_route_selected` has nothing to do: a request with telemetry never comes here."""
    fastapi_scope = _get_fastapi_scope(scope)
    fastapi_scope[_FASTAPI_INCLUDED_ROUTER_KEY] = holder
    _match, child_scope = context.matches(scope)
    child_scope["route"] = context.original_route  # as `APIRoute.matches` adds it
    _update_scope(scope, child_scope)
    fastapi_scope[_FASTAPI_EFFECTIVE_ROUTE_CONTEXT_KEY] = context
    scope["route"] = context.original_route
    await context.app(scope, receive, send)


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
            candidates = top.effective_candidates()
            for context in top.effective_route_contexts():
                original = context.original_route
                start = _literal_start(context.path_format)
                if isinstance(original, DirectRoute) and original.direct and _clear(start, before):
                    direct = not top.include_context.form_limits and _first_to_take(context, candidates)
                    hot.append(
                        _Hot(
                            context.path_regex,
                            frozenset(context.methods or ()),
                            top,
                            context if direct else None,
                            candidates,
                        )
                    )
        before.extend(_starts(top))
    if hot:
        router.middleware_stack = HotPaths(router, router.middleware_stack, hot)


def _first_to_take(context: Any, candidates: list[Any]) -> bool:
    """Whether `context` is one of its router's own routes (not of a router nested in it) and no route
    before it there takes any request it takes."""
    if context not in candidates:
        return False
    for other in candidates[: candidates.index(context)]:
        if isinstance(other, _IncludedRouter) or not _disjoint(other, context):
            return False
    return True


def _disjoint(one: Any, other: Any) -> bool:
    """True only if no request can match both fully: their methods share none, or their paths differ in
    a literal segment or in their number of segments (no parameter of either may take a `/`)."""
    methods, other_methods = getattr(one, "methods", None), getattr(other, "methods", None)
    if methods and other_methods and not set(methods) & set(other_methods):
        return True
    path, other_path = getattr(one, "path_format", None), getattr(other, "path_format", None)
    if not isinstance(path, str) or not isinstance(other_path, str):
        return False
    segments, other_segments = path.split("/"), other_path.split("/")
    if any(":path}" in segment for segment in (*segments, *other_segments)):
        return False
    if len(segments) != len(other_segments):
        return True
    return any(
        "{" not in a and "{" not in b and a != b for a, b in zip(segments, other_segments, strict=True)
    )


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
