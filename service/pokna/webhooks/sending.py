"""One HTTP attempt: POST the signed message, and tell only whether a 2xx came back, and how fast.

Redirects are not followed (a 3xx is a failure), proxies from the environment are not used, the attempt
is bounded by the timeout from connecting to the end of the answer, and at most `max_response_bytes` of
the answer are read and then dropped: nothing a receiver says travels further than its status code.
"""

from __future__ import annotations

import time

import httpx

from pokna.webhooks.addresses import UnsafeUrl, check_url
from pokna.webhooks.attempts import AttemptResult, Claim
from pokna.webhooks.policy import DeliveryPolicy
from pokna.webhooks.schemas import AttemptError
from pokna.webhooks.signing import signature_header

USER_AGENT = "Pokna-Webhooks/1"


def new_client() -> httpx.Client:
    return httpx.Client(follow_redirects=False, trust_env=False, headers={"User-Agent": USER_AGENT})


def send(client: httpx.Client, policy: DeliveryPolicy, claim: Claim) -> AttemptResult:
    started = time.monotonic()

    def result(status_code: int | None, error: AttemptError | None) -> AttemptResult:
        return AttemptResult(status_code, int((time.monotonic() - started) * 1000), error)

    try:
        check_url(claim.url, policy.urls)  # again: what the host resolves to may have changed
    except UnsafeUrl:
        return result(None, AttemptError.UNSAFE_ADDRESS)
    timestamp = int(time.time())
    headers = {
        "content-type": "application/json",
        "webhook-id": claim.message_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": signature_header(claim.live_secrets, claim.message_id, timestamp, claim.body),
    }
    try:
        with client.stream(
            "POST", claim.url, content=claim.body, headers=headers, timeout=policy.timeout_seconds
        ) as response:
            read = 0
            for chunk in response.iter_raw():
                read += len(chunk)
                if read >= policy.max_response_bytes or time.monotonic() - started > policy.timeout_seconds:
                    break
            ok = 200 <= response.status_code < 300
            return result(response.status_code, None if ok else AttemptError.HTTP_STATUS)
    except httpx.TimeoutException:
        return result(None, AttemptError.TIMEOUT)
    except (httpx.HTTPError, httpx.InvalidURL, httpx.StreamError, OSError, ValueError):
        return result(None, AttemptError.CONNECTION)  # one bad receiver never stops the worker
