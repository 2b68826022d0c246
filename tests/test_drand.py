"""pokna.drand against real HTTP relays on 127.0.0.1 (support.beacon_server): the relay speaks drand's API,
the client takes the first relay that serves a round that verifies, waits a bounded time for a round not yet
published, and calls a beacon that stopped publishing an outage."""

from __future__ import annotations

import asyncio
import dataclasses
import socket
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from pokna.drand import BeaconRelays, BeaconUnavailable
from pokna.settings import Settings
from pokna_verify.fairness.beacon import (
    QUICKNET,
    BeaconChain,
    BeaconRound,
    first_round_after_ms,
    round_problem,
    round_published_at_ms,
)
from support.beacon_server import BeaconKey, BeaconRelay, beacon_relay

MARGIN_SECONDS = 0.5


@pytest.fixture
def relay() -> Iterator[BeaconRelay]:
    with beacon_relay(period=1, rounds_before_now=5) as running:
        yield running


def closed_port_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


def relays(*urls: str, chain: BeaconChain) -> BeaconRelays:
    return BeaconRelays(urls=urls, chain=chain, request_timeout_seconds=2.0, margin_seconds=MARGIN_SECONDS)


def test_the_relay_speaks_drands_http_api(relay: BeaconRelay) -> None:
    chain = relay.chain
    with httpx.Client(base_url=relay.url) as http:
        for prefix in (f"/{chain.chain_hash}", ""):
            info = http.get(f"{prefix}/info").json()
            assert BeaconChain.from_drand_info(info) == chain
            latest = BeaconRound(**http.get(f"{prefix}/public/latest").json())
            assert round_problem(chain, latest) is None
            assert latest.round == relay.latest_round()
            third = BeaconRound(**http.get(f"{prefix}/public/3").json())
            assert third.round == 3
            assert round_problem(chain, third) is None
            assert http.get(f"{prefix}/public/{latest.round + 5}").status_code == 404
        assert http.get(f"/{'0' * 64}/public/latest").status_code == 404  # another chain


def test_latest_and_a_past_round_are_verified(relay: BeaconRelay) -> None:
    client = relays(relay.url, chain=relay.chain)
    latest = asyncio.run(client.latest())
    assert latest.round >= 5
    assert asyncio.run(client.get(2)) == relay.key.sign(2)


def test_the_first_relay_that_answers_is_used(relay: BeaconRelay) -> None:
    client = relays(closed_port_url(), relay.url, chain=relay.chain)
    assert asyncio.run(client.get(4)) == relay.key.sign(4)


def test_a_relay_serving_rounds_that_do_not_verify_is_passed_over(relay: BeaconRelay) -> None:
    """A relay of another key (a forger, or a misconfigured relay) answers first; its rounds are refused."""
    with beacon_relay(period=1, rounds_before_now=5, key=BeaconKey(secret=12345)) as forger:
        forged_chain = dataclasses.replace(forger.chain, chain_hash=relay.chain.chain_hash)
        forger.chain = forged_chain
        client = relays(forger.url, relay.url, chain=relay.chain)
        assert asyncio.run(client.get(3)) == relay.key.sign(3)
        only_forger = relays(forger.url, chain=relay.chain)
        assert asyncio.run(only_forger.get(3)) is None
        with pytest.raises(BeaconUnavailable, match="the BLS signature does not verify"):
            asyncio.run(only_forger.latest())


def test_the_client_waits_for_the_next_round_and_gets_it(relay: BeaconRelay) -> None:
    client = relays(relay.url, chain=relay.chain)
    latest = relay.latest_round()
    named = first_round_after_ms(client.chain, client.now_ms())
    assert named > latest  # what a player's client checks: the named round is not published yet
    # The relay's clock is moved on 0.2 s from now: the round arrives then, not at its due time.
    threading.Timer(0.2, relay.advance, args=(1.0,)).start()
    started = time.monotonic()
    arrived = asyncio.run(client.wait_for(named))
    assert arrived == relay.key.sign(named)
    assert time.monotonic() - started < 1.0 + MARGIN_SECONDS


def test_a_beacon_that_stops_publishing_is_an_outage_within_a_period_and_the_margin(
    relay: BeaconRelay,
) -> None:
    relay.stop_publishing()
    client = relays(relay.url, chain=relay.chain)
    named = first_round_after_ms(client.chain, client.now_ms())
    started = time.monotonic()
    with pytest.raises(
        BeaconUnavailable, match=f"drand round {named} was not published by any relay"
    ) as raised:
        asyncio.run(client.wait_for(named))
    waited = time.monotonic() - started
    assert waited <= relay.chain.period + MARGIN_SECONDS + 0.5
    assert raised.value.status == 503
    assert "HTTP 404" in str(raised.value)


def test_every_relay_down_is_an_outage() -> None:
    client = relays(closed_port_url(), closed_port_url(), chain=QUICKNET)
    with pytest.raises(BeaconUnavailable, match="ConnectError"):
        asyncio.run(client.latest())


def test_a_round_named_more_than_a_period_ahead_is_refused_at_once(relay: BeaconRelay) -> None:
    client = relays(relay.url, chain=relay.chain)
    far = first_round_after_ms(relay.chain, client.now_ms()) + 3
    assert round_published_at_ms(relay.chain, far) > client.now_ms() + 1000
    asked_before = len(relay.paths)
    with pytest.raises(BeaconUnavailable, match="more than one period"):
        asyncio.run(client.wait_for(far))
    # Refused from the clock alone: no relay asked, nothing waited for.
    assert relay.paths[asked_before:] == []


def test_the_relays_come_from_the_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POKNA_BEACON_URLS", "http://127.0.0.1:9/, https://relay.example/")
    monkeypatch.setenv("POKNA_BEACON_WAIT_MARGIN_SECONDS", "1.5")
    client = BeaconRelays.for_settings(Settings())
    assert client.chain == QUICKNET
    assert tuple(client.urls) == ("http://127.0.0.1:9", "https://relay.example")
    assert client.margin_seconds == 1.5
    monkeypatch.setenv("POKNA_BEACON_URLS", "ftp://relay.example")
    with pytest.raises(ValueError, match="not an http"):
        Settings()
