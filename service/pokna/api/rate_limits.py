"""Per-API-key rate limits: a token bucket per key, in this process, refused with 429 before any work.

Each key's bucket holds up to `burst` tokens and refills at `rate` per second; a request takes one. The
check runs before the body is read and before authentication, so a throttled client costs no database
round trip and cannot slow another tenant's requests down. Buckets are keyed by a digest of the bearer key
(never the key itself) and at most `MAX_TRACKED_KEYS` are kept: a full bucket is what a forgotten key
would get anyway, so dropping the least recently seen one loses nothing.

Why per process and not shared through the database: docs/operations.md, "Rate limits".

The headers are those of the IETF draft "RateLimit header fields for HTTP"
(draft-ietf-httpapi-ratelimit-headers-08 and later): `RateLimit-Policy` states the quota (`q`, the burst)
and its window (`w`, the seconds a full refill takes), `RateLimit` what is left (`r`) and the seconds
until the bucket is full again (`t`); a 429 adds `Retry-After`, the seconds until one request is allowed.

Requests without a key, or with a key this process has not yet seen authenticate, are counted per client
address instead (`POKNA_CLIENT_RATE_LIMIT_*`): the public fairness links, `/readyz` and `/openapi.json`
cost the service work too, and a bucket per key would let anyone who makes keys up have a fresh burst for
each (each costing an authentication read). The two kinds have a bucket each per address, so a flood of
requests without a key cannot keep a new, valid key from its first request (issue 37, item 4), nor a flood
of made-up keys the public links. A key joins the per-key buckets once it has authenticated in this
process (`RateLimits.remember`), and leaves them at its first 401 (revoked).

A scrape of `/metrics` from an address allowed to scrape (`RateLimits.exempt`) is not counted at all: it
is rendered at most once a second whoever asks, and an operator's monitoring must not go blind exactly
when a flood from the same host fills the buckets.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from starlette.types import Scope, Send

from pokna.api.asgi_problems import send_problem

MAX_TRACKED_KEYS = 10_000
POLICY_NAME = "per-key"
CLIENT_POLICY_NAME = "per-client"


@dataclass(frozen=True)
class Decision:
    allowed: bool
    remaining: int
    seconds_to_full: int
    retry_after: int


@dataclass
class _Bucket:
    tokens: float
    updated_at: float


class TokenBuckets:
    """One bucket per key. Used from the event loop only (the middleware), so no lock is needed."""

    def __init__(
        self,
        rate: float,
        burst: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        max_keys: int = MAX_TRACKED_KEYS,
        name: str = POLICY_NAME,
    ) -> None:
        self.rate = rate
        self.burst = burst
        self.name = name
        self._clock = clock
        self._max_keys = max_keys
        self._buckets: OrderedDict[bytes, _Bucket] = OrderedDict()

    def take(self, key: bytes) -> Decision:
        now = self._clock()
        bucket = self._buckets.pop(key, None) or _Bucket(float(self.burst), now)
        bucket.tokens = min(float(self.burst), bucket.tokens + (now - bucket.updated_at) * self.rate)
        bucket.updated_at = now
        allowed = bucket.tokens >= 1
        if allowed:
            bucket.tokens -= 1
        self._buckets[key] = bucket
        if len(self._buckets) > self._max_keys:
            self._buckets.popitem(last=False)
        return Decision(
            allowed=allowed,
            remaining=math.floor(bucket.tokens),
            seconds_to_full=math.ceil((self.burst - bucket.tokens) / self.rate),
            retry_after=0 if allowed else max(1, math.ceil((1 - bucket.tokens) / self.rate)),
        )

    @property
    def policy(self) -> str:
        return f'"{self.name}";q={self.burst};w={max(1, math.ceil(self.burst / self.rate))}'


class RateLimits:
    """The per-key buckets, for keys known to be keys; the per-client buckets, for everything else. Either
    may be None (turned off). Used from the event loop only."""

    def __init__(
        self,
        per_key: TokenBuckets | None,
        per_client: TokenBuckets | None,
        *,
        exempt: Callable[[Scope], bool] = lambda scope: False,
        max_known: int = MAX_TRACKED_KEYS,
    ) -> None:
        self.per_key = per_key
        self.per_client = per_client
        self.exempt = exempt
        self._max_known = max_known
        self._known: OrderedDict[bytes, None] = OrderedDict()

    def knows(self, key: bytes) -> bool:
        if key not in self._known:
            return False
        self._known.move_to_end(key)
        return True

    def remember(self, key: bytes) -> None:
        """The key authenticated: its requests count against its own bucket from now on."""
        self._known[key] = None
        self._known.move_to_end(key)
        if len(self._known) > self._max_known:
            self._known.popitem(last=False)

    def forget(self, key: bytes) -> None:
        """The key was refused (revoked): its requests count against their client's bucket again."""
        self._known.pop(key, None)


def bearer_key_digest(scope: Scope) -> bytes | None:
    """The bucket's key: a digest of the bearer key, never the key itself; None without one."""
    for name, value in scope["headers"]:
        if name == b"authorization":
            scheme, _, credentials = value.partition(b" ")
            if scheme.lower() == b"bearer" and credentials.strip():
                return hashlib.sha256(credentials.strip()).digest()
    return None


def client_address(scope: Scope) -> bytes:
    """The connection's address, or the client's a trusted reverse proxy forwarded (uvicorn's
    `FORWARDED_ALLOW_IPS`)."""
    client = scope.get("client")
    return b"client:" + (client[0].encode() if client else b"")


def client_party(scope: Scope) -> bytes:
    """Who a request is for the database gate's turns (`pokna.api.database_gate`): its bearer key's digest,
    else its client's address."""
    return bearer_key_digest(scope) or client_address(scope)


async def throttle(
    scope: Scope, send: Send, limits: RateLimits, key: bytes | None
) -> list[tuple[bytes, bytes]] | None:
    """Takes a token for the request: from its key's bucket if the key is known, else from its client
    address's. Returns the headers its answer carries, or None when it was refused here (429 sent)."""
    if limits.exempt(scope):
        return []
    if key is not None and limits.knows(key):
        buckets, party, whose = limits.per_key, key, "this API key"
    elif key is not None:
        buckets, party = limits.per_client, b"unknown key " + client_address(scope)
        whose = "this client address (requests with an API key not yet seen here)"
    else:
        buckets, party = limits.per_client, client_address(scope)
        whose = "this client address (requests without an API key)"
    if buckets is None:
        return []
    decision = buckets.take(party)
    headers = {
        "RateLimit-Policy": buckets.policy,
        "RateLimit": f'"{buckets.name}";r={decision.remaining};t={decision.seconds_to_full}',
    }
    if not decision.allowed:
        await send_problem(
            scope,
            send,
            status=429,
            code="too_many_requests",
            title="Too many requests",
            detail=f"{whose} is over its rate limit; retry in {decision.retry_after} s",
            headers={**headers, "Retry-After": str(decision.retry_after)},
        )
        return None
    return [(name.lower().encode(), value.encode()) for name, value in headers.items()]
