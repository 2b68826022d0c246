"""A receiver that answers 429 (or 503) with `Retry-After` gets its next attempt no sooner than it asked,
when it asks for longer than the schedule's next step, and never later than the schedule's largest step;
both of the header's forms (delta-seconds, an HTTP-date) count, and a value that is neither is ignored.
The receiver is real, on 127.0.0.1; the attempt is the worker's own steps."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from pokna.db.types import utc_now
from pokna.runtime import Runtime
from pokna.webhooks.attempts import claim_next, record_result
from pokna.webhooks.backoff import asked_wait
from pokna.webhooks.dispatch import dispatch_events
from pokna.webhooks.pinning import new_client
from pokna.webhooks.policy import DeliveryPolicy
from pokna.webhooks.schemas import DeliveryStatus
from pokna.webhooks.sending import send
from support.tenant_api import new_tenant
from support.webhook_receiver import Failure, running_receiver
from support.webhook_worker import fast_webhook_settings

__all__ = ["fast_webhook_settings"]

LARGEST_STEP = 600.0
SLACK = 60.0  # the attempt's own duration, between its claim (`last_attempt_at`) and its record


def _seconds(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def http_date(after_seconds: float) -> tuple[str, datetime]:
    """An HTTP-date `after_seconds` from now, and the moment it names (to the second, as the form has it)."""
    moment = (datetime.now(UTC) + timedelta(seconds=after_seconds)).replace(microsecond=0)
    return format_datetime(moment, usegmt=True), moment


async def one_attempt(runtime: Runtime, policy: DeliveryPolicy, tenant_id: str) -> DeliveryStatus | None:
    """The worker's steps for one attempt of the tenant's delivery: fan out, claim, send, record."""
    client = new_client()
    try:
        async with runtime.aio.connection() as connection:
            await dispatch_events(connection, policy, utc_now())
            claim = await claim_next(connection, runtime.keys.seed_key, policy, utc_now(), [tenant_id])
        assert claim is not None
        result = await send(client, policy, claim)
        async with runtime.aio.connection() as connection:
            return await record_result(connection, policy, utc_now(), claim, result)
    finally:
        await client.close()


# (how the receiver fails, its Retry-After, the schedule's first step) -> the least and most wait
CASES = {
    "429 delta-seconds": ("throttled", "120", 1.0, 120.0, 120.0 + SLACK),
    "503 delta-seconds": ("status", "120", 1.0, 120.0, 120.0 + SLACK),
    "429 HTTP-date": ("throttled", "in 300 s", 1.0, 0.0, 300.0 + SLACK),  # and not before the date
    "capped at the largest step": ("throttled", "999999999", 1.0, LARGEST_STEP, LARGEST_STEP + SLACK),
    "shorter than the schedule": ("throttled", "5", 90.0, 90.0, 90.0 * 1.25 + SLACK),
    "garbage": ("throttled", "soon", 1.0, 1.0, 1.25 + SLACK),
    "a past date": ("throttled", "in -300 s", 1.0, 1.0, 1.25 + SLACK),
}


@pytest.mark.parametrize("case", CASES)
def test_retry_after_sets_the_next_attempt_within_the_schedules_bounds(
    client: TestClient, sessions: sessionmaker[Session], runtime: Runtime, case: str
) -> None:
    failure, retry_after, first_step, least, most = CASES[case]
    named = None
    if retry_after.startswith("in "):
        retry_after, named = http_date(float(retry_after.split()[1]))
    tenant = new_tenant(client, sessions)
    policy = replace(
        DeliveryPolicy.from_settings(runtime.settings),
        backoff_initial_seconds=first_step,
        backoff_max_seconds=LARGEST_STEP,
    )
    throttling: Failure = "throttled" if failure == "throttled" else "status"
    with running_receiver(fail_first=1, failure=throttling) as receiver:
        receiver.retry_after = retry_after
        made = tenant.post(
            "/v1/webhooks/endpoints", {"url": receiver.url, "event_types": ["ledger.deposit.posted"]}
        )
        assert made.status_code == 201, made.text
        tenant.wallet(10)
        assert asyncio.run(one_attempt(runtime, policy, tenant.tenant_id)) is DeliveryStatus.PENDING
        assert [request.answered for request in receiver.requests()] == [
            429 if failure == "throttled" else 503
        ]
    [delivery] = tenant.get(f"/v1/webhooks/endpoints/{made.json()['id']}/deliveries").json()["data"]
    wait = (_seconds(delivery["next_attempt_at"]) - _seconds(delivery["last_attempt_at"])).total_seconds()
    assert least <= wait <= most, (case, wait)
    if named is not None and named > _seconds(delivery["last_attempt_at"]):
        assert _seconds(delivery["next_attempt_at"]) >= named
    elif named is not None:
        assert wait <= 1.25 + SLACK  # a date already past asks for nothing


NOW = datetime(2026, 12, 7, 1, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("120", 120.0),
        (" 7 ", 7.0),
        ("0", None),
        ("Mon, 07 Dec 2026 01:02:00 GMT", 120.0),
        ("Monday, 07-Dec-26 01:02:00 GMT", 120.0),  # RFC 850's obsolete form, which recipients accept
        ("Mon Dec  7 01:02:00 2026", 120.0),  # asctime's, in GMT too
        ("Mon, 07 Dec 2026 00:59:00 GMT", None),
        ("-5", None),
        ("1.5", None),
        ("", None),
        (None, None),
        ("soon", None),
        ("120 seconds", None),
        ("9" * 400, 1e9),  # a number too long to mean anything but "much later": the most it can ask
        ("0000000005", 5.0),  # delta-seconds is 1*DIGIT: leading zeros count for nothing, not for length
        ("0" * 400 + "7", 7.0),
    ],
)
def test_retry_after_is_read_in_both_forms_and_garbage_is_none(
    value: str | None, seconds: float | None
) -> None:
    assert asked_wait(value, NOW) == seconds
