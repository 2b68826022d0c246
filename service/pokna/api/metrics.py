"""`GET /metrics` for Prometheus, with the official prometheus-client, and the recorder behind
`pokna.metrics` that keeps the numbers.

With several worker processes (`pokna serve --workers N` sets `PROMETHEUS_MULTIPROC_DIR` for them) each
process writes its values to files and a scrape adds up every process's, whichever worker answers it;
without the variable (one process, or a TestClient) the process's own registry is the answer.
docs/metrics.md lists every metric; METRICS_DESCRIPTION says the same in the OpenAPI document.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import APIRouter, FastAPI, Response
from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.multiprocess import MultiProcessCollector, mark_process_dead
from sqlalchemy import Engine, event

from pokna import metrics
from pokna.api.problem_docs import problems
from pokna.metrics import MULTIPROCESS_DIR_VARIABLE

REQUEST_SECONDS = Histogram(
    "pokna_http_request_duration_seconds",
    "Time to answer an HTTP request, by method, route template and status.",
    ["method", "route", "status"],
)
IDEMPOTENT_REPLAYS = Counter(
    "pokna_idempotent_replays",
    "POSTs answered from a stored response under their Idempotency-Key (nothing done again), by route.",
    ["route"],
)
GAME_ACTIONS = Counter(
    "pokna_game_actions",
    "Game actions the dealer ran, by action type and result (`ok` or the refusal's error code).",
    ["type", "result"],
)
GAMES_FINISHED = Counter(
    "pokna_games_finished",
    "Games that ended in this service (an action or a passed deadline), by outcome.",
    ["outcome"],
)
LEDGER_TRANSACTIONS = Counter(
    "pokna_ledger_transactions_posted", "Journal transactions posted to the ledger."
)
LEDGER_POST_SECONDS = Histogram(
    "pokna_ledger_post_duration_seconds",
    "Time of one posting call (one or more journal transactions, locks included).",
)
DB_CONNECTIONS_CHECKED_OUT = Gauge(
    "pokna_db_connections_checked_out",
    "Database connections checked out of the pools of the live worker processes.",
    multiprocess_mode="livesum",
)

METRICS_DESCRIPTION = """\
Prometheus text exposition (`text/plain; version=0.0.4`), added up over every worker process.
No API key: scrape it from inside your network and keep it off the public listener.

| metric | type | labels | meaning |
| --- | --- | --- | --- |
| `pokna_http_request_duration_seconds` | histogram | `method`, `route`, `status` | time to answer a request; `route` is the template (`/v1/games/{game_id}`), `unmatched` for unknown paths |
| `pokna_idempotent_replays_total` | counter | `route` | POSTs answered from the stored response of an earlier one with the same `Idempotency-Key` |
| `pokna_game_actions_total` | counter | `type`, `result` | game actions run, `result` `ok` or the refusal's problem `code` (`not_your_turn`, ...) |
| `pokna_games_finished_total` | counter | `outcome` | games ended here, by settle reason (`claimed`, `split`, ...) or `cancelled` |
| `pokna_ledger_transactions_posted_total` | counter | — | journal transactions posted |
| `pokna_ledger_post_duration_seconds` | histogram | — | time of one posting call, locks included |
| `pokna_db_connections_checked_out` | gauge | — | connections checked out of the live workers' pools |
"""

router = APIRouter(tags=["operations"])


@router.get(
    "/metrics",
    summary="Metrics for Prometheus: requests, game actions, games, ledger postings, database pool",
    description=METRICS_DESCRIPTION,
    response_class=Response,
    responses={
        200: {
            "description": "The Prometheus text exposition format, version 0.0.4",
            "content": {CONTENT_TYPE_PLAIN_0_0_4: {"schema": {"type": "string"}}},
        },
        **problems(),
    },
)
def scrape() -> Response:
    """A plain `def`: reading the workers' files is blocking I/O, so it runs in the thread pool."""
    return Response(generate_latest(_registry()), media_type=CONTENT_TYPE_PLAIN_0_0_4)


def _registry() -> CollectorRegistry:
    if os.environ.get(MULTIPROCESS_DIR_VARIABLE):
        registry = CollectorRegistry()
        MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        return registry
    return REGISTRY


class _PrometheusRecorder:
    def http_request(self, method: str, route: str, status: int, seconds: float) -> None:
        REQUEST_SECONDS.labels(method, route, str(status)).observe(seconds)

    def idempotent_replay(self, route: str) -> None:
        IDEMPOTENT_REPLAYS.labels(route).inc()

    def game_action(self, action_type: str, result: str) -> None:
        GAME_ACTIONS.labels(action_type, result).inc()

    def game_finished(self, outcome: str) -> None:
        GAMES_FINISHED.labels(outcome).inc()

    def ledger_posted(self, transactions: int, seconds: float) -> None:
        LEDGER_TRANSACTIONS.inc(transactions)
        LEDGER_POST_SECONDS.observe(seconds)


def enable(engine: Engine) -> None:
    """Starts recording in this process, and follows the engine's pool."""
    metrics.record_with(_PrometheusRecorder())
    if not event.contains(engine, "checkout", _checked_out):
        event.listen(engine, "checkout", _checked_out)
        event.listen(engine, "checkin", _checked_in)


def _checked_out(*_: Any) -> None:
    DB_CONNECTIONS_CHECKED_OUT.inc()


def _checked_in(*_: Any) -> None:
    DB_CONNECTIONS_CHECKED_OUT.dec()


@asynccontextmanager
async def worker_lifespan(app: FastAPI) -> AsyncIterator[None]:
    """A worker that stops takes its live gauges with it, so they no longer count in the sum."""
    yield
    if os.environ.get(MULTIPROCESS_DIR_VARIABLE):
        mark_process_dead(os.getpid())  # type: ignore[no-untyped-call]
