"""schemathesis against the live app: every operation of the OpenAPI document, with data that fits the
document (positive) and data that does not (negative), as an authenticated tenant with wallets, games and
a table to find. No answer may be a server error or contradict the document: its status, content type,
headers and body must be the ones documented, data the document forbids must be refused, and (through the
`client` fixture) every problem's code must be one the operation declares.

Bounded: EXAMPLES per operation and mode, derandomized so that a run is reproducible.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from sqlalchemy.orm import Session, sessionmaker

from pokna.runtime import Runtime
from support.tenant_api import new_tenant
from support.webhook_worker import fan_out

EXAMPLES = 12
CONFORMANCE = [
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]


def _seed(
    client: TestClient, sessions: sessionmaker[Session], runtime: Runtime
) -> tuple[dict[str, str], dict[str, str]]:
    """The tenant's API headers, and an id that exists for each path parameter."""
    api = new_tenant(client, sessions)
    vigo, player, other = (api.wallet(balance=1_000) for _ in range(3))
    hooks = {"url": "http://127.0.0.1:9/hooks", "event_types": ["game.created"]}
    endpoint = api.post("/v1/webhooks/endpoints", hooks)
    assert endpoint.status_code == 201, endpoint.text
    game = api.post("/v1/games", {"vigo_account_id": vigo, "player_account_ids": [player, other], "stake": 5})
    assert game.status_code == 201, game.text
    table = api.post("/v1/tables", {"account_ids": [vigo, player], "stake": 5})
    assert table.status_code == 201, table.text
    token = game.json()["fairness"]["public_url"].rsplit("/", 1)[-1]
    fan_out(runtime)  # the worker's first step: the game's event becomes a delivery
    deliveries = api.get(f"/v1/webhooks/endpoints/{endpoint.json()['id']}/deliveries").json()["data"]
    ids = {
        "endpoint_id": endpoint.json()["id"],
        "delivery_id": deliveries[0]["id"],
        "account_id": player,
        "game_id": game.json()["id"],
        "table_id": table.json()["id"],
        "token": token,
        "tenant_id": api.tenant_id,  # the public log's: empty here, so its reads answer their documented 404
        "tree_size": "1",
    }
    return api.headers, ids


def _exercise(
    operation: Any, mode: GenerationMode, headers: dict[str, str], ids: dict[str, str], tally: Counter[str]
) -> None:
    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=EXAMPLES,
        derandomize=True,
        database=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    def call(case: Any) -> None:
        if mode is GenerationMode.POSITIVE:
            for name in case.path_parameters or {}:
                case.path_parameters[name] = ids[name]
        response = case.call(headers=headers)
        tally[f"{mode.value} {response.status_code}"] += 1
        assert response.status_code < 500, (case.as_curl_command(), response.text)
        checks = [*CONFORMANCE, negative_data_rejection] if mode is GenerationMode.NEGATIVE else CONFORMANCE
        case.validate_response(response, checks=checks, headers=headers)

    call()


def test_every_operation_answers_as_documented(
    client: TestClient, sessions: sessionmaker[Session], runtime: Runtime
) -> None:
    headers, ids = _seed(client, sessions, runtime)
    schema = schemathesis.openapi.from_asgi("/openapi.json", client.app)
    # Unknown query parameters are ignored, as HTTP APIs do; the tenant's key is sent with every case.
    schema.config.generation.update(allow_extra_parameters=False, with_security_parameters=False)
    tally: Counter[str] = Counter()
    operations = 0
    for result in schema.get_all_operations():
        operation = result.ok()  # type: ignore[union-attr]  # raises on an operation it cannot read
        operations += 1
        _exercise(operation, GenerationMode.POSITIVE, headers, ids, tally)
        try:
            _exercise(operation, GenerationMode.NEGATIVE, headers, ids, tally)
        except Unsatisfiable:
            tally["negative: nothing to break"] += 1  # an operation with no parameter and no body
    print(
        f"schemathesis: {operations} operations, {sum(tally.values())} examples, {dict(sorted(tally.items()))}"
    )
    assert operations >= 20
    assert tally["positive 200"] + tally["positive 201"] > 0
