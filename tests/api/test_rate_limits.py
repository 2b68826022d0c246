"""Per-API-key rate limits: a token bucket per key, 429 problem+json with `RateLimit`, `RateLimit-Policy`
and `Retry-After`, and one tenant's flood does not cost another tenant its answers."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy.orm import Session, sessionmaker

from pokna.api.rate_limits import TokenBuckets
from pokna.app import create_app
from pokna.runtime import Runtime
from pokna.settings import Settings
from support.api_checks import assert_problem, database_state
from support.tenant_api import TenantApi, new_tenant

RATE_LIMIT = re.compile(r'^"per-key";r=(\d+);t=(\d+)$')


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_full_bucket_allows_the_burst_then_one_request_per_refill() -> None:
    clock = FakeClock()
    buckets = TokenBuckets(rate=2, burst=3, clock=clock)
    decisions = [buckets.take(b"a") for _ in range(4)]
    assert [decision.allowed for decision in decisions] == [True, True, True, False]
    assert [decision.remaining for decision in decisions] == [2, 1, 0, 0]
    assert decisions[-1].retry_after == 1
    assert buckets.take(b"b").allowed  # another key has a bucket of its own
    clock.now += 0.5  # one token at 2 per second
    assert buckets.take(b"a").allowed
    assert not buckets.take(b"a").allowed
    clock.now += 60
    assert buckets.take(b"a").remaining == 2  # refilled to the burst, never beyond
    assert buckets.policy == '"per-key";q=3;w=2'


def test_the_number_of_keys_tracked_is_bounded() -> None:
    clock = FakeClock()
    buckets = TokenBuckets(rate=1, burst=1, clock=clock, max_keys=3)
    for key in (b"a", b"b", b"c", b"d"):
        assert buckets.take(key).allowed
    assert buckets.take(b"d").allowed is False  # still tracked
    assert buckets.take(b"a").allowed  # forgotten: a full bucket again, as after a long pause


@given(
    rate=st.floats(min_value=0.1, max_value=100),
    burst=st.integers(min_value=1, max_value=50),
    steps=st.lists(
        st.tuples(st.floats(min_value=0, max_value=2), st.sampled_from([b"a", b"b"])), max_size=300
    ),
)
def test_no_key_ever_gets_more_than_its_burst_plus_the_rate(
    rate: float, burst: int, steps: list[tuple[float, bytes]]
) -> None:
    """Over any stretch of time T a key is allowed at most burst + rate x T requests, and a key that has
    waited 1/rate since a refusal is allowed again."""
    clock = FakeClock()
    start = clock.now
    buckets = TokenBuckets(rate=rate, burst=burst, clock=clock)
    allowed = {b"a": 0, b"b": 0}
    for pause, key in steps:
        clock.now += pause
        decision = buckets.take(key)
        allowed[key] += decision.allowed
        assert allowed[key] <= burst + rate * (clock.now - start) + 1e-6
        assert 0 <= decision.remaining <= burst - 1 or (not decision.allowed and decision.remaining == 0)
        if not decision.allowed:
            clock.now += decision.retry_after
            assert buckets.take(key).allowed
            allowed[key] += 1


def _remaining(header: str) -> int:
    match = RATE_LIMIT.match(header)
    assert match, header
    return int(match[1])


def _limited_client(
    settings: Settings,
    runtime: Runtime,
    rate: float,
    burst: int,
    client_rate: float | None = None,
    client_burst: int | None = None,
) -> TestClient:
    limited = settings.model_copy(
        update={
            "rate_limit_per_second": rate,
            "rate_limit_burst": burst,
            "client_rate_limit_per_second": settings.client_rate_limit_per_second
            if client_rate is None
            else client_rate,
            "client_rate_limit_burst": client_burst or settings.client_rate_limit_burst,
        }
    )
    return TestClient(create_app(limited, runtime), raise_server_exceptions=False)


def test_a_key_over_its_limit_gets_429_with_the_headers_and_nothing_is_done(
    settings: Settings, runtime: Runtime, sessions: sessionmaker[Session]
) -> None:
    with _limited_client(settings, runtime, rate=0.01, burst=5) as client:
        first, second = new_tenant(client, sessions, "First"), new_tenant(client, sessions, "Second")
        # Two requests, the first counted against the client's address (the key is not yet known to be one).
        wallet = first.wallet(10)
        answers = [first.get(f"/v1/accounts/{wallet}") for _ in range(4)]
        assert [answer.status_code for answer in answers] == [200, 200, 200, 200]
        assert [_remaining(answer.headers["RateLimit"]) for answer in answers] == [3, 2, 1, 0]
        assert all(answer.headers["RateLimit-Policy"] == '"per-key";q=5;w=500' for answer in answers)

        before = database_state(sessions)
        refused = first.post(
            f"/v1/accounts/{wallet}/deposits", {"amount": 5}, headers={"Idempotency-Key": "k"}
        )
        problem = assert_problem(refused, 429, "too_many_requests")
        assert "rate limit" in problem["detail"]
        assert int(refused.headers["Retry-After"]) >= 1
        assert _remaining(refused.headers["RateLimit"]) == 0
        assert refused.headers["RateLimit-Policy"] == '"per-key";q=5;w=500'
        assert database_state(sessions) == before

        assert second.wallet(3)  # the other tenant is untouched


def test_requests_without_a_known_key_are_limited_per_client_address(
    settings: Settings, runtime: Runtime, sessions: sessionmaker[Session]
) -> None:
    """No key, or a made-up one (issue 28, F5): each new key had a full bucket of its own, and a request
    without a key was never counted. Each kind has a bucket per address (issue 37, item 4)."""
    with _limited_client(settings, runtime, rate=100, burst=100, client_rate=0.01, client_burst=4) as client:
        healthy = [client.get("/healthz") for _ in range(3)]
        assert [answer.status_code for answer in healthy] == [200, 200, 200]
        assert healthy[-1].headers["RateLimit-Policy"] == '"per-client";q=4;w=400'
        assert healthy[-1].headers["RateLimit"].startswith('"per-client";r=1;')
        made_up = [
            TenantApi(client, "none", f"pk_made_up_{n}").get("/v1/ledger/trial-balance") for n in range(5)
        ]
        assert [answer.status_code for answer in made_up] == [401, 401, 401, 401, 429]
        problem = assert_problem(made_up[-1], 429, "too_many_requests")
        assert "API key not yet seen here" in problem["detail"]
        assert client.get("/openapi.json").status_code == 200  # the last of the keyless bucket
        problem = assert_problem(client.get("/openapi.json"), 429, "too_many_requests")
        assert "without an API key" in problem["detail"]
        elsewhere = TestClient(client.app, client=("192.0.2.7", 5000))
        assert elsewhere.get("/healthz").status_code == 200  # another address has its own
        tenant = new_tenant(elsewhere, sessions)
        assert tenant.get("/v1/ledger/trial-balance").status_code == 200  # the key is known now
        assert all(tenant.get("/v1/ledger/trial-balance").status_code == 200 for _ in range(10))


def test_a_flood_without_keys_costs_neither_a_new_key_nor_the_metrics_scrape(
    settings: Settings, runtime: Runtime, sessions: sessionmaker[Session]
) -> None:
    """Issue 37, item 4: during an anonymous flood from one address, a new, valid key from the same address
    got 429s, and so did Prometheus scraping `/metrics` over loopback."""
    with _limited_client(settings, runtime, rate=100, burst=100, client_rate=0.01, client_burst=3) as client:
        local = TestClient(client.app, client=("127.0.0.1", 40000), raise_server_exceptions=False)
        flood = [local.get("/healthz").status_code for _ in range(10)]
        assert flood == [200, 200, 200] + [429] * 7
        tenant = new_tenant(local, sessions)
        assert [tenant.get("/v1/ledger/trial-balance").status_code for _ in range(5)] == [200] * 5
        scrapes = [local.get("/metrics") for _ in range(5)]
        assert [scrape.status_code for scrape in scrapes] == [200] * 5
        assert "RateLimit" not in scrapes[0].headers
        assert local.get("/healthz").status_code == 429  # the flood's own bucket is still empty
        # From an address not allowed to scrape, /metrics is a request like any other (403, counted).
        outside = TestClient(client.app, client=("192.0.2.8", 40000), raise_server_exceptions=False)
        answers = [outside.get("/metrics").status_code for _ in range(4)]
        assert answers == [403, 403, 403, 429]


def test_a_made_up_key_sent_to_a_public_route_stays_limited_per_client_address(
    settings: Settings, runtime: Runtime
) -> None:
    """A public route (the public logs) checks no key, so a key sent along never counts as checked: were it
    remembered, any made-up key would earn a bucket of its own by asking a public route once."""
    with _limited_client(settings, runtime, rate=100, burst=100, client_rate=0.01, client_burst=4) as client:
        made_up = TenantApi(client, "none", "pk_made_up_public")
        answers = [made_up.get("/v1/logs/tnt_nobody/checkpoint") for _ in range(5)]
        assert [answer.status_code for answer in answers] == [404, 404, 404, 404, 429]
        assert "API key not yet seen here" in assert_problem(answers[-1], 429)["detail"]
