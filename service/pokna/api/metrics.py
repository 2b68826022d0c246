"""`GET /metrics` for Prometheus, with the official prometheus-client, and the recorder behind
`pokna.metrics` that keeps the numbers.

With several worker processes (`pokna serve --workers N` sets `PROMETHEUS_MULTIPROC_DIR` for them) each
process writes its values to files and a scrape adds up every process's, whichever worker answers it;
without the variable (one process, or a TestClient) the process's own registry is the answer.
docs/metrics.md lists every metric; METRICS_DESCRIPTION says the same in the OpenAPI document.
"""

from __future__ import annotations

import ipaddress
import os
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from fastapi import APIRouter, FastAPI, Request, Response
from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.multiprocess import MultiProcessCollector, mark_process_dead
from starlette.types import Scope

from pokna import metrics
from pokna.api.metrics_backlog import BacklogGauges
from pokna.api.problem_docs import METRICS_NOT_ALLOWED, problems
from pokna.errors import Forbidden
from pokna.metrics import MULTIPROCESS_DIR_VARIABLE
from pokna.settings import Settings
from pokna_verify.invariant import present

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
DB_GATE_PLACES = Gauge(
    "pokna_db_gate_places",
    "Places of the database gates of the live worker processes (each its pool's size and overflow).",
    multiprocess_mode="livesum",
)
DB_GATE_WAITING = Gauge(
    "pokna_db_gate_waiting_requests",
    "Requests waiting in the database gates' queues of the live worker processes for a place.",
    multiprocess_mode="livesum",
)
DB_GATE_WAIT_SECONDS = Histogram(
    "pokna_db_gate_wait_seconds",
    "Time a request waited at the database gate for a place (0 when one was free), timeouts included.",
    buckets=(0.001, 0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
)
DB_GATE_TIMEOUTS = Counter(
    "pokna_db_gate_timeouts",
    "Requests refused with a 503 because no place came free within POKNA_DATABASE_POOL_TIMEOUT_SECONDS.",
)

KNOWN_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
OTHER_METHOD = "other"
"""The `method` label of any other method: HTTP lets a client invent methods, and a label value per
invented one grew the exposition without bound (issue 28, F4)."""

SCRAPE_REUSE_SECONDS = 1.0
"""A rendering is answered again for this long: Prometheus scrapes every 15 s or so, and a flood of
scrapes then costs one rendering per second, whatever the exposition's size."""

METRICS_DESCRIPTION = """\
Prometheus text exposition (`text/plain; version=0.0.4`), added up over every worker process and
rendered at most once a second. No API key: it answers only clients whose address is in
`POKNA_METRICS_ALLOWED_NETWORKS` (loopback by default), others get 403 `forbidden`.

| metric | type | labels | meaning |
| --- | --- | --- | --- |
| `pokna_http_request_duration_seconds` | histogram | `method`, `route`, `status` | time to answer a request; `method` is `other` for a method HTTP does not define here, `route` the template (`/v1/games/{game_id}`), `unmatched` for unknown paths, `status` 499 for a client that hung up |
| `pokna_idempotent_replays_total` | counter | `route` | POSTs answered from the stored response of an earlier one with the same `Idempotency-Key` |
| `pokna_game_actions_total` | counter | `type`, `result` | game actions run, `result` `ok` or the refusal's problem `code` (`not_your_turn`, ...) |
| `pokna_games_finished_total` | counter | `outcome` | games ended here, by settle reason (`claimed`, `split`, ...) or `cancelled` |
| `pokna_ledger_transactions_posted_total` | counter | — | journal transactions posted |
| `pokna_ledger_post_duration_seconds` | histogram | — | time of one posting call, locks included |
| `pokna_db_connections_checked_out` | gauge | — | connections checked out of the live workers' pools |
| `pokna_db_gate_places` | gauge | — | places of the live workers' database gates (their pools' connections) |
| `pokna_db_gate_waiting_requests` | gauge | — | requests waiting in the gates' queues for a place |
| `pokna_db_gate_wait_seconds` | histogram | — | each request's wait for a place (0 when one was free), timeouts included |
| `pokna_db_gate_timeouts_total` | counter | — | waits that ran out: 503 `database_unavailable` |
| `pokna_backlog_up` | gauge | — | 1 if the backlog gauges below were read from the database (at most every 10 s), else 0 and they are left out |
| `pokna_backlog_read_duration_seconds` | gauge | — | time the last read of the backlog gauges took |
| `pokna_game_deadlines_overdue`, `pokna_game_deadline_overdue_seconds` | gauge | — | games past a turn or start deadline whose default is not applied yet, and how far past the oldest is |
| `pokna_beacon_rolls_overdue`, `pokna_beacon_roll_overdue_seconds` | gauge | — | beacon-mode rolls still waiting past their deadline (round due + 5 s), and how far past the oldest is |
| `pokna_wallets_held_by_overdue_rolls` | gauge | — | seated wallets those rolls hold |
| `pokna_webhook_backlog`, `pokna_webhook_backlog_oldest_seconds` | gauge | `stage` | webhook work waiting: `fan_out` events, `delivery` deliveries due now; and how long the oldest has waited |
| `pokna_ledger_unsigned_seconds` | gauge | — | age of the oldest journal transaction no signed checkpoint covers (0 when all are) |
"""

router = APIRouter(tags=["operations"])
_rendered: tuple[float, BacklogGauges | None, bytes] | None = None


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
        **problems(METRICS_NOT_ALLOWED),
    },
)
async def scrape(request: Request) -> Response:
    """In the event loop, no thread: the backlog's read is a task of the loop (pokna.api.metrics_backlog),
    and the rendering reads the workers' small files (memory-mapped, local) at most once a
    SCRAPE_REUSE_SECONDS."""
    settings: Settings = request.app.state.runtime.settings
    if not _allowed(request.client.host if request.client else None, settings):
        raise Forbidden(
            "/metrics answers only the addresses of POKNA_METRICS_ALLOWED_NETWORKS; scrape it from there"
        )
    backlog: BacklogGauges | None = getattr(request.app.state, "backlog", None)
    if backlog is not None and _renders_afresh(backlog):
        await backlog.refresh()
    return Response(_exposition(backlog), media_type=CONTENT_TYPE_PLAIN_0_0_4)


def allowed_scrape(settings: Settings) -> Callable[[Scope], bool]:
    """Whether a request is a scrape of `/metrics` from an allowed address: the edge does not rate-limit
    those (`pokna.api.rate_limits`)."""

    def allowed(scope: Scope) -> bool:
        client = scope.get("client")
        return scope["path"] == "/metrics" and _allowed(client[0] if client else None, settings)

    return allowed


def _allowed(host: str | None, settings: Settings) -> bool:
    """By the address the connection came from, or the one a trusted reverse proxy forwarded (uvicorn's
    `FORWARDED_ALLOW_IPS`, loopback by default): docs/metrics.md says what a proxy must do."""
    try:
        address = ipaddress.ip_address(host or "")
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return any(address in network for network in settings.metrics_networks)


def _renders_afresh(backlog: BacklogGauges | None) -> bool:
    """Whether the next `_exposition` renders (and so shows the backlog's latest), or answers the last."""
    return (
        _rendered is None
        or time.monotonic() - _rendered[0] >= SCRAPE_REUSE_SECONDS
        or _rendered[1] is not backlog
    )


def _exposition(backlog: BacklogGauges | None) -> bytes:
    """One rendering per `SCRAPE_REUSE_SECONDS` (in the event loop, so one at a time): the workers'
    metrics, then the app's backlog gauges (pokna.api.metrics_backlog)."""
    global _rendered  # one per process, like the registry it renders
    if _renders_afresh(backlog):
        rendering = generate_latest(_registry())
        if backlog is not None:
            rendering += backlog.exposition()
        _rendered = (time.monotonic(), backlog, rendering)
    return present(_rendered, "the exposition rendered just above")[2]


def _registry() -> CollectorRegistry:
    if os.environ.get(MULTIPROCESS_DIR_VARIABLE):
        registry = CollectorRegistry()
        MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        return registry
    return REGISTRY


class _PrometheusRecorder(metrics.Recorder):
    def http_request(self, method: str, route: str, status: int, seconds: float) -> None:
        method = method if method in KNOWN_METHODS else OTHER_METHOD
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

    def db_gate_places(self, places: int) -> None:
        DB_GATE_PLACES.set(places)

    def db_connections_checked_out(self, change: int) -> None:
        DB_CONNECTIONS_CHECKED_OUT.inc(change)

    def db_gate_waiting(self, change: int) -> None:
        DB_GATE_WAITING.inc(change)

    def db_gate_waited(self, seconds: float, timed_out: bool) -> None:
        DB_GATE_WAIT_SECONDS.observe(seconds)
        if timed_out:
            DB_GATE_TIMEOUTS.inc()


def enable() -> None:
    """Starts recording in this process."""
    metrics.record_with(_PrometheusRecorder())


@asynccontextmanager
async def worker_lifespan(app: FastAPI) -> AsyncIterator[None]:
    """A worker that stops takes its live gauges with it, so they no longer count in the sum."""
    yield
    if os.environ.get(MULTIPROCESS_DIR_VARIABLE):
        mark_process_dead(os.getpid())  # type: ignore[no-untyped-call]
