"""A resolver slower than the webhook timeout: the attempt ends as a timeout while the lookup still hangs,
and the event loop serves other work meanwhile (the lookup runs off the loop). DNS is the outside world
here: the tests give the attempt a resolver of their own that hangs until they release it; the receiver and
the other request are real, on 127.0.0.1."""

from __future__ import annotations

import asyncio
import ipaddress
import threading
from datetime import timedelta

import httpx
import pytest

from pokna.webhooks.addresses import (
    MAX_LOOKUPS,
    Address,
    HostNotFound,
    ResolutionTimedOut,
    UnsafeUrl,
    UrlPolicy,
    check_url_within,
)
from pokna.webhooks.attempts import Claim
from pokna.webhooks.pinning import new_client
from pokna.webhooks.policy import DeliveryPolicy
from pokna.webhooks.schemas import AttemptError
from pokna.webhooks.sending import send
from pokna.webhooks.signing import generate_secret
from support.webhook_receiver import running_receiver

TIMEOUT_SECONDS = 0.5
FALLBACK_SECONDS = 10.0  # only if the test never releases it: the old code blocked until the lookup ended
PRODUCTION_URLS = UrlPolicy(https_only=True, public_addresses_only=True)
DEVELOPMENT_URLS = UrlPolicy(https_only=False, public_addresses_only=False)


class HangingResolver:
    """Answers 127.0.0.1, but only once released; says whether it has answered yet."""

    def __init__(self) -> None:
        self.asked = threading.Event()
        self.released = threading.Event()
        self.answered = threading.Event()

    def __call__(self, host: str, port: int) -> list[Address]:
        self.asked.set()
        self.released.wait(timeout=FALLBACK_SECONDS)
        self.answered.set()
        return [ipaddress.ip_address("127.0.0.1")]


def policy(urls: UrlPolicy) -> DeliveryPolicy:
    return DeliveryPolicy(
        urls=urls,
        timeout_seconds=TIMEOUT_SECONDS,
        backoff_initial_seconds=1,
        backoff_max_seconds=10,
        attempt_limit=3,
        secret_overlap=timedelta(days=1),
        retention=timedelta(days=7),
    )


async def served_while_the_lookup_hangs(resolver: HangingResolver, url: str) -> bool:
    """Once the lookup has started, another request on this loop, to a real receiver: whether it was
    answered before the lookup was."""
    while not resolver.asked.is_set():
        await asyncio.sleep(0.001)
    async with httpx.AsyncClient(trust_env=False) as other:
        answer = await other.post(url, content=b"{}", headers={"webhook-id": "msg_other"})
    assert answer.status_code == 200
    return not resolver.answered.is_set()


def test_a_lookup_slower_than_the_timeout_times_the_attempt_out_and_the_loop_keeps_serving() -> None:
    resolver = HangingResolver()

    async def attempt_beside_other_work(url: str) -> tuple[AttemptError | None, bool, bool]:
        claim = Claim("ten_x", "whdl_x", "token", 1, "msg_slow", b"{}", url, (generate_secret(),))
        client = new_client()
        try:
            other = asyncio.create_task(served_while_the_lookup_hangs(resolver, url))
            result = await send(client, policy(DEVELOPMENT_URLS), claim, resolver)
            over_before_the_answer = not resolver.answered.is_set()
            served_meanwhile = await other
        finally:
            resolver.released.set()
            await client.close()
        return result.error, over_before_the_answer, served_meanwhile

    with running_receiver() as receiver:
        error, over_before_the_answer, served_meanwhile = asyncio.run(attempt_beside_other_work(receiver.url))
        assert [request.message_id for request in receiver.requests()] == ["msg_other"]  # never sent
    assert error is AttemptError.TIMEOUT
    assert over_before_the_answer
    assert served_meanwhile


def test_an_endpoints_check_gives_up_on_a_lookup_slower_than_the_timeout() -> None:
    """Saving an endpoint under the production policy: a host that does not resolve within the timeout is
    refused (it does not resolve now), while the lookup still hangs."""
    resolver = HangingResolver()

    async def check() -> bool:
        try:
            with pytest.raises(HostNotFound, match=r"did not resolve within 0\.5 s"):
                await check_url_within(
                    "https://slow.example/hooks", PRODUCTION_URLS, TIMEOUT_SECONDS, resolver
                )
            return not resolver.answered.is_set()
        finally:
            resolver.released.set()

    assert asyncio.run(check())


def test_lookups_the_resolver_still_holds_are_capped_and_one_more_is_given_up_at_once() -> None:
    """A lookup given up on keeps its thread until the resolver answers; with a resolver that never does,
    each attempt or endpoint check would leave one more. At most MAX_LOOKUPS wait on it at once: one more
    is given up without a thread (the host cannot be resolved now), and a place frees once one answers."""
    held = HangingResolver()
    extra = HangingResolver()

    def lookups_alive() -> int:
        return sum(thread.name.endswith(".held.example") for thread in threading.enumerate())

    async def check(host: str, resolver: HangingResolver) -> None:
        await check_url_within(f"https://{host}/hooks", PRODUCTION_URLS, 0.01, resolver)

    async def hold_every_place() -> list[BaseException | None]:
        hosts = [f"n{number}.held.example" for number in range(MAX_LOOKUPS)]
        return await asyncio.gather(*(check(host, held) for host in hosts), return_exceptions=True)

    try:
        given_up = asyncio.run(hold_every_place())
        assert all(isinstance(refusal, ResolutionTimedOut) for refusal in given_up)
        assert lookups_alive() == MAX_LOOKUPS
        with pytest.raises(ResolutionTimedOut, match="cannot be resolved now"):
            asyncio.run(check("one-more.held.example", extra))
        assert lookups_alive() == MAX_LOOKUPS
        assert not extra.asked.is_set()
    finally:
        held.released.set()
        extra.released.set()
    for thread in threading.enumerate():
        if thread.name.endswith(".held.example"):
            thread.join()
    after = HangingResolver()
    after.released.set()
    with pytest.raises(UnsafeUrl, match=r"non-public address \(127\.0\.0\.1\)"):  # looked up and judged
        asyncio.run(check("after.example", after))
