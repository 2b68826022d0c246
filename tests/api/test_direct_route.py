"""The hot routes answer a valid request without FastAPI's dependency solver (pokna.api.direct_route), and
anything else exactly as FastAPI does: every refusal below is compared, byte for byte but for the request
id, with the same request sent while a dependency override (of `get_clock` by itself, which changes
nothing) makes the route take FastAPI's own handler."""

from __future__ import annotations

import json
from typing import Annotated, Any

import fastapi.routing
import pytest
from fastapi import APIRouter, FastAPI, Header, Response
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from pokna.api.direct_route import DirectRoute
from pokna.dealer.clock_dep import get_clock
from support.tenant_api import money_key, new_tenant

TOO_LONG_ID = "game_" + "0" * 40


@pytest.fixture
def solved(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths whose requests went through FastAPI's `solve_dependencies`."""
    paths: list[str] = []
    original = fastapi.routing.solve_dependencies  # type: ignore[attr-defined]

    async def counted(**kwargs: Any) -> Any:
        if kwargs["dependant"].path is not None:  # the endpoint's own solving, not a sub-dependency's
            paths.append(kwargs["request"].url.path)
        return await original(**kwargs)

    monkeypatch.setattr(fastapi.routing, "solve_dependencies", counted)
    return paths


def test_a_valid_request_to_a_hot_route_skips_the_solver(
    client: TestClient, sessions: sessionmaker[Session], solved: list[str]
) -> None:
    api = new_tenant(client, sessions)
    vigo, player = api.wallet(), api.wallet()
    solved.clear()
    for account in (vigo, player):
        assert api.deposit(account, 1_000).status_code == 201
    assert api.withdraw(player, 10).status_code == 201
    terms = {"vigo_account_id": vigo, "player_account_ids": [player], "stake": 5}
    game = api.post("/v1/games", terms, headers=money_key())
    assert game.status_code == 201, game.text
    acted = api.post(
        f"/v1/games/{game.json()['id']}/actions", {"type": "start", "account_id": vigo}, headers=money_key()
    )
    assert acted.status_code == 200, acted.text
    assert solved == []
    api.get(f"/v1/games/{game.json()['id']}")  # a route that answers a model: FastAPI's, as before
    assert solved == [f"/v1/games/{game.json()['id']}"]


def _answer(response: Any) -> tuple[int, str, Any, list[str]]:
    body: Any = response.content
    if response.headers.get("content-type", "").endswith("json"):
        body = json.loads(body)
        if isinstance(body, dict):
            body.pop("request_id", None)
    names = sorted(name for name in response.headers if name not in ("x-request-id", "date"))
    return response.status_code, response.headers.get("content-type", ""), body, names


def test_every_refusal_is_fastapis(client: TestClient, sessions: sessionmaker[Session]) -> None:
    api = new_tenant(client, sessions)
    vigo, player = api.wallet(1_000), api.wallet(1_000)
    terms = {"vigo_account_id": vigo, "player_account_ids": [player], "stake": 5}
    game_id = api.post("/v1/games", terms, headers=money_key()).json()["id"]
    action = f"/v1/games/{game_id}/actions"
    deposit = f"/v1/accounts/{player}/deposits"
    start = {"type": "start", "account_id": vigo}
    as_json = {"content-type": "application/json"}
    cases: list[tuple[str, str, bytes, dict[str, str]]] = [
        ("no API key", action, json.dumps(start).encode(), {"authorization": ""}),
        (
            "an unknown API key",
            action,
            json.dumps(start).encode(),
            {**as_json, "authorization": "Bearer pk_x"},
        ),
        ("a key with a trailing space", action, json.dumps(start).encode(), {"idempotency-key": "a "}),
        ("a blank quoted key", action, json.dumps(start).encode(), {"idempotency-key": '""'}),
        ("JSON that does not parse", action, b'{"action": ', {}),
        ("a JSON array", action, b"[]", {}),
        ("an unknown action", action, json.dumps({**start, "type": "fly"}).encode(), {}),
        ("no body", action, b"", {}),
        ("a text body", action, json.dumps(start).encode(), {"content-type": "text/plain"}),
        (
            "JSON by its suffix, not valid",
            action,
            json.dumps({**start, "type": "fly"}).encode(),
            {"content-type": "application/x+json"},
        ),
        ("a game id too long", f"/v1/games/{TOO_LONG_ID}/actions", json.dumps(start).encode(), {}),
        ("a NUL in the game id", "/v1/games/game_%00/actions", json.dumps(start).encode(), {}),
        ("a bad key and a bad body", action, b"[]", {"idempotency-key": "a "}),
        ("an unknown game", f"/v1/games/game_{'0' * 32}/actions", json.dumps(start).encode(), {}),
        ("an unknown seat", action, json.dumps({**start, "account_id": "acct_x"}).encode(), {}),
        ("a game without its terms", "/v1/games", b"{}", {}),
        ("a deposit without a key", deposit, b'{"amount": 5}', {}),
        ("a deposit without a key or an API key", deposit, b'{"amount": 5}', {"authorization": ""}),
        ("a deposit of a fraction", deposit, b'{"amount": 0.99999999999999999}', money_key()),
        ("a deposit to nowhere", f"/v1/accounts/acct_{'0' * 32}/deposits", b'{"amount": 5}', money_key()),
        ("a withdrawal of too much", f"/v1/accounts/{player}/withdrawals", b'{"amount": 5000}', money_key()),
    ]
    app: FastAPI = client.app  # type: ignore[assignment]
    for label, path, body, headers in cases:
        sent = {"authorization": api.headers["Authorization"], **as_json, **headers}
        if not sent["authorization"]:  # "" for none
            del sent["authorization"]
        direct = client.post(path, content=body, headers=sent)
        app.dependency_overrides[get_clock] = get_clock
        try:
            solved = client.post(path, content=body, headers=sent)
        finally:
            app.dependency_overrides.clear()
        assert direct.status_code >= 400, (label, direct.text)
        assert _answer(direct) == _answer(solved), label


def test_parameters_sent_once_skip_fastapis_extraction(
    client: TestClient, sessions: sessionmaker[Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A game id and an Idempotency-Key are validated field by field, and an optional one not sent takes
    its default (pokna.api.direct_route._read_scalars)."""
    from fastapi.dependencies import utils

    extracted: list[list[str]] = []
    original = utils.request_params_to_args

    def counted(fields: Any, received: Any) -> Any:
        extracted.append([field.name for field in fields])
        return original(fields, received)

    monkeypatch.setattr(utils, "request_params_to_args", counted)
    api = new_tenant(client, sessions)
    vigo, player = api.wallet(1_000), api.wallet(1_000)
    terms = {"vigo_account_id": vigo, "player_account_ids": [player], "stake": 5}
    game_id = api.post("/v1/games", terms, headers=money_key()).json()["id"]
    extracted.clear()
    start = {"type": "start", "account_id": vigo}
    acted = api.post(f"/v1/games/{game_id}/actions", start, headers=money_key())
    assert acted.status_code == 200, acted.text
    rolled = api.post(f"/v1/games/{game_id}/actions", {"type": "roll", "account_id": player})
    assert rolled.status_code in (200, 409), rolled.text  # whoever's turn it is: no key either way
    assert extracted == []


def test_a_required_parameter_not_sent_is_fastapis_422() -> None:
    """A parameter missing with no default to take is left to FastAPI's extraction, which words the 422,
    as is a value that does not validate."""
    router = APIRouter(route_class=DirectRoute)

    @router.post("/echo/{number}")
    async def echo(
        number: int, label: Annotated[str, Header()], note: Annotated[str, Header()] = "-"
    ) -> Response:
        return Response(f"{number} {label} {note}".encode())

    (route,) = router.routes
    assert isinstance(route, DirectRoute)
    assert route.direct
    app = FastAPI()
    app.include_router(router)
    with TestClient(app) as plain:
        assert plain.post("/echo/7", headers={"label": "x"}).text == "7 x -"
        assert plain.post("/echo/7", headers={"label": "x", "note": "y"}).text == "7 x y"
        missing = plain.post("/echo/7")
        assert missing.status_code == 422
        assert missing.json()["detail"][0]["loc"] == ["header", "label"]
        assert plain.post("/echo/x", headers={"label": "x"}).json()["detail"][0]["loc"] == ["path", "number"]
