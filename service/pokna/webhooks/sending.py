"""One HTTP attempt: POST the signed message, and tell only whether a 2xx came back, and how fast.

The host is resolved once, every address is judged by the URL policy, and the connection goes to one of
those very addresses (pokna.webhooks.pinning), in the resolver's order, the next one only if connecting
to the previous failed (nothing was sent yet). Redirects are not followed (a 3xx is a failure), proxies
from the environment are not used, the attempt is bounded by the timeout from connecting to the end of
the answer, and at most `max_response_bytes` of the answer are read and then dropped: nothing a receiver
says travels further than its status code, and, for a 429 or 503, how long its `Retry-After` asks to wait
(pokna.webhooks.backoff).

Async, in the worker's event loop (httpx's async client, pokna.webhooks.pinning). The host is resolved with
the system's resolver in a thread of its own, off the loop, and the lookup counts against the attempt's
timeout like the rest of it: a resolver slower than the timeout makes the attempt a timeout, retried as
any other, and stalls nothing else on the loop meanwhile (pokna.webhooks.addresses). That thread is no
exception to the "no thread hop" rule, which is about the road to the database; nothing of it goes there.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from datetime import UTC, datetime

import httpx

from pokna.webhooks.addresses import (
    HostNotFound,
    ResolutionTimedOut,
    Resolver,
    UnsafeUrl,
    allowed_addresses_within,
    check_url_form,
)
from pokna.webhooks.attempts import AttemptResult, Claim
from pokna.webhooks.backoff import asked_wait
from pokna.webhooks.pinning import PinnedClient
from pokna.webhooks.policy import DeliveryPolicy
from pokna.webhooks.schemas import AttemptError
from pokna.webhooks.signing import signature_header

DEFAULT_PORTS = {"http": 80, "https": 443}
ASKS_TO_WAIT = (429, 503)  # the answers whose `Retry-After` says when to come back (RFC 9110, 10.2.3)


async def send(
    client: PinnedClient, policy: DeliveryPolicy, claim: Claim, resolve: Resolver | None = None
) -> AttemptResult:
    started = time.monotonic()

    def result(
        status_code: int | None, error: AttemptError | None, asked_wait_seconds: float | None = None
    ) -> AttemptResult:
        return AttemptResult(status_code, int((time.monotonic() - started) * 1000), error, asked_wait_seconds)

    try:
        check_url_form(claim.url, policy.urls)
        url = httpx.URL(claim.url)
        host, port = url.raw_host.decode("ascii"), url.port or DEFAULT_PORTS[url.scheme]
        # Again, since the answer may have changed; in the time the attempt has.
        addresses = await allowed_addresses_within(host, port, policy.urls, policy.timeout_seconds, resolve)
    except ResolutionTimedOut:
        return result(None, AttemptError.TIMEOUT)
    except HostNotFound:
        # A refusal where names must resolve to be judged (production); elsewhere, a network failure.
        return result(
            None,
            AttemptError.UNSAFE_ADDRESS if policy.urls.public_addresses_only else AttemptError.CONNECTION,
        )
    except UnsafeUrl:
        return result(None, AttemptError.UNSAFE_ADDRESS)
    except (httpx.InvalidURL, KeyError, UnicodeError):
        return result(None, AttemptError.CONNECTION)
    timestamp = int(time.time())
    headers = {
        "content-type": "application/json",
        "webhook-id": claim.message_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": signature_header(claim.live_secrets, claim.message_id, timestamp, claim.body),
    }
    for address in addresses:
        client.addresses.pin(host, port, address)
        try:
            return await _post(client.http, url, headers, claim.body, policy, started, result)
        except httpx.ConnectError:
            if time.monotonic() - started > policy.timeout_seconds:
                break
        except (httpx.TimeoutException, TimeoutError):  # TimeoutError: the deadline on the answer's head
            return result(None, AttemptError.TIMEOUT)
        except (httpx.HTTPError, httpx.InvalidURL, httpx.StreamError, OSError, ValueError):
            return result(None, AttemptError.CONNECTION)  # one bad receiver never stops the worker
    return result(None, AttemptError.CONNECTION)


async def _post(
    http: httpx.AsyncClient,
    url: httpx.URL,
    headers: dict[str, str],
    body: bytes,
    policy: DeliveryPolicy,
    started: float,
    result: Callable[[int | None, AttemptError | None, float | None], AttemptResult],
) -> AttemptResult:
    # Connecting, sending and the answer's head get what is left of one timeout, shared by all the addresses
    # tried, so an attempt stays within its lease (that, then the answer's body, bounded by the timeout).
    # httpx's timeouts are per read: a head trickled a byte at a time would never end without the deadline.
    left = max(policy.timeout_seconds - (time.monotonic() - started), 0.001)
    timeout = httpx.Timeout(policy.timeout_seconds, connect=left)
    async with AsyncExitStack() as answer:
        async with asyncio.timeout(left):
            response = await answer.enter_async_context(
                http.stream("POST", url, content=body, headers=headers, timeout=timeout)
            )
        read = 0
        async for chunk in response.aiter_raw():
            read += len(chunk)
            if read >= policy.max_response_bytes or time.monotonic() - started > policy.timeout_seconds:
                break
        ok = 200 <= response.status_code < 300
        asked = None
        if response.status_code in ASKS_TO_WAIT:
            asked = asked_wait(response.headers.get("retry-after"), datetime.now(UTC))
        return result(response.status_code, None if ok else AttemptError.HTTP_STATUS, asked)
