"""The hot routes skip the scan of the routes before theirs (pokna.api.hot_paths): the route a request is
handed to is the one the scan would have chosen, with the scope the scan would have given it."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from fastapi import APIRouter, FastAPI, Request, Response
from fastapi.routing import _IncludedRouter
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker
from starlette.routing import Match

from pokna.api import hot_paths
from pokna.api.direct_route import DirectRoute
from pokna.api.hot_paths import HotPaths
from support.tenant_api import money_key, new_tenant


def test_a_game_action_tries_no_other_router(
    client: TestClient, sessions: sessionmaker[Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    api = new_tenant(client, sessions)
    vigo, player = api.wallet(1_000), api.wallet(1_000)
    terms = {"vigo_account_id": vigo, "player_account_ids": [player], "stake": 5}
    game_id = api.post("/v1/games", terms, headers=money_key()).json()["id"]
    tried: list[str] = []
    original, scan = _IncludedRouter.matches, _IncludedRouter._match

    def matches(self: _IncludedRouter, scope: Any) -> Any:
        tried.append(self.original_router.prefix)
        return original(self, scope)

    def scanned(self: _IncludedRouter, scope: Any) -> Any:
        tried.append(f"its own routes of {self.original_router.prefix}")
        return scan(self, scope)

    monkeypatch.setattr(_IncludedRouter, "matches", matches)
    monkeypatch.setattr(_IncludedRouter, "_match", scanned)
    acted = api.post(
        f"/v1/games/{game_id}/actions", {"type": "start", "account_id": vigo}, headers=money_key()
    )
    assert acted.status_code == 200, acted.text
    assert api.deposit(player, 5).status_code == 201
    assert tried == []
    assert api.post(f"/v1/games/{game_id}/nowhere", {}).status_code == 404  # not hot: scanned as before
    assert tried


def _scope(method: str, path: str) -> dict[str, Any]:
    return {
        "type": "http",
        "method": method,
        "path": path,
        "root_path": "",
        "headers": [],
        "query_string": b"",
    }


def _scanned(app: FastAPI, method: str, path: str) -> Any:
    """The top-level route the router's scan takes for this request, FULL first."""
    scope = _scope(method, path)
    for route in app.router.routes:
        if route.matches(scope)[0] == Match.FULL:
            return route
    return None


def test_each_hot_route_goes_where_the_scan_would(client: TestClient) -> None:
    app: FastAPI = client.app  # type: ignore[assignment]
    table = app.router.middleware_stack
    assert isinstance(table, HotPaths)
    hot_paths = sorted(hot.path_regex.pattern for hot in table.hot)
    assert hot_paths == [
        "^/v1/accounts/(?P<account_id>[^/]+)/deposits$",
        "^/v1/accounts/(?P<account_id>[^/]+)/withdrawals$",
        "^/v1/games$",
        "^/v1/games/(?P<game_id>[^/]+)/actions$",
        "^/v1/tables/(?P<table_id>[^/]+)/rounds$",
    ]
    every_path = [
        re.sub(r"\{[^}]+\}", "x_1", context.path_format)
        for top in app.router.routes
        if isinstance(top, _IncludedRouter)
        for context in top.effective_route_contexts()
    ]
    direct = sorted(hot.context.path_format for hot in table.hot if hot.context is not None)
    assert direct == [  # each the first of its router's routes to take its requests
        "/v1/accounts/{account_id}/deposits",
        "/v1/accounts/{account_id}/withdrawals",
        "/v1/games",
        "/v1/games/{game_id}/actions",
        "/v1/tables/{table_id}/rounds",
    ]
    for hot in table.hot:
        for path in every_path:
            for method in hot.methods:
                if hot.path_regex.match(path):
                    assert _scanned(app, method, path) is hot.holder, (method, path)
                    if hot.context is not None:  # and the holder's own scan takes the same route
                        chosen = hot.holder._match(_scope(method, path))[2]
                        assert chosen is hot.context.original_route, (method, path)


def _snapshot(scope: dict[str, Any]) -> dict[str, Any]:
    return {**scope, "fastapi": dict(scope.get("fastapi", {}))}


async def _through(entry: Any, method: str, path: str) -> None:
    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        return None

    await entry({**_scope(method, path), "state": {}}, receive, send)


def test_a_hot_route_gets_the_scope_the_scan_gives_it(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the table and through the router's scan (`HotPaths.routed`), the route's app gets the same
    scope: its path parameters, endpoint and route, and FastAPI's keys (the inclusion, the route's
    effective context) that its handler and `url_for` read."""
    app: FastAPI = client.app  # type: ignore[assignment]
    table = app.router.middleware_stack
    assert isinstance(table, HotPaths)
    for hot in table.hot:
        if hot.context is None:
            continue
        seen: list[dict[str, Any]] = []

        async def capture(scope: Any, receive: Any, send: Any, seen: list[Any] = seen) -> None:
            seen.append(_snapshot(scope))

        monkeypatch.setattr(hot.context, "app", capture)
        path = re.sub(r"\{[^}]+\}", "x_1", hot.context.path_format)
        (method,) = hot.methods
        asyncio.run(_through(table, method, path))
        asyncio.run(_through(table.routed, method, path))
        assert len(seen) == 2, path
        assert seen[0] == seen[1], path
        assert seen[0]["route"] is hot.context.original_route


def _app(*paths: str) -> tuple[FastAPI, APIRouter]:
    """An app whose one router has a direct route per path, in order, each answering its own path."""
    router = APIRouter(route_class=DirectRoute)
    for path in paths:
        router.add_api_route(path, _answering(path), methods=["POST"])
    app = FastAPI()
    app.include_router(router)
    hot_paths.install(app)
    return app, router


def _answering(path: str) -> Any:
    async def endpoint() -> Response:
        return Response(path.encode())

    return endpoint


def test_a_route_another_before_it_may_take_goes_through_its_routers_scan() -> None:
    app, _router = _app("/things/{a}/{b}", "/things/{a}/go")
    table = app.router.middleware_stack
    assert isinstance(table, HotPaths)
    assert [hot.context is not None for hot in table.hot] == [True, False]
    assert TestClient(app).post("/things/1/go").content == b"/things/{a}/{b}"  # the scan's choice


def test_a_router_whose_routes_changed_is_scanned_again() -> None:
    """FastAPI builds a router's inclusions anew when its routes change: the table's are then stale, and
    the request goes through the router's scan, to the inclusion it has now."""

    async def current(request: Request) -> Response:
        fastapi_scope = request.scope["fastapi"]
        context = fastapi_scope["effective_route_context"]
        now = fastapi_scope["included_router"].effective_candidates()
        return Response(b"current" if any(context is candidate for candidate in now) else b"stale")

    app, router = _app()
    router.add_api_route("/things/{a}", current, methods=["POST"])
    hot_paths.install(app)
    client = TestClient(app)
    assert client.post("/things/1").content == b"current"
    router.add_api_route("/things/{a}", _answering("/things/{a}, added"), methods=["PUT"])
    assert client.post("/things/1").content == b"current"
    assert client.put("/things/1").content == b"/things/{a}, added"
