"""The hot routes skip the scan of the routes before theirs (pokna.api.hot_paths), and the router they are
handed to is the one the scan would have chosen."""

from __future__ import annotations

import re
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.routing import _IncludedRouter
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker
from starlette.routing import Match

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
    original = _IncludedRouter.matches

    def matches(self: _IncludedRouter, scope: Any) -> Any:
        tried.append(self.original_router.prefix)
        return original(self, scope)

    monkeypatch.setattr(_IncludedRouter, "matches", matches)
    acted = api.post(
        f"/v1/games/{game_id}/actions", {"type": "start", "account_id": vigo}, headers=money_key()
    )
    assert acted.status_code == 200, acted.text
    assert tried == []
    assert api.post(f"/v1/games/{game_id}/nowhere", {}).status_code == 404  # not hot: scanned as before
    assert tried


def _scanned(app: FastAPI, method: str, path: str) -> Any:
    """The top-level route the router's scan takes for this request, FULL first."""
    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "root_path": "",
        "headers": [],
        "query_string": b"",
    }
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
    for hot in table.hot:
        for path in every_path:
            for method in hot.methods:
                if hot.path_regex.match(path):
                    assert _scanned(app, method, path) is hot.holder, (method, path)
