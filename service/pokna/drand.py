"""The drand relays' HTTP client: a verified round of the beacon chain, now or as soon as it is published.

The relays (`POKNA_BEACON_URLS`) are asked in order and the first that answers with a round that verifies
(pokna_verify.fairness.beacon.verify_round) is used: a relay is only a messenger, so an answer that does not verify
is treated as no answer and the next relay is asked. A round not published in time is an outage, a typed
error (`BeaconUnavailable`, 503): a beacon-mode roll never falls back to anything else.

The shell part of the beacon mode: it reads the network and the clock, the pure rules are in
pokna_verify.fairness.beacon.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

import httpx

from pokna.errors import PoknaError
from pokna.settings import Settings
from pokna_verify.fairness.beacon import (
    QUICKNET,
    BeaconChain,
    BeaconError,
    BeaconRound,
    round_published_at_ms,
    verify_round,
)
from pokna_verify.fairness.errors import MalformedProofError
from pokna_verify.fairness.json_reader import JsonReader

POLL_SECONDS = 0.25  # between two asks for a round that is due but not yet served


def beacon_chain(settings: Settings) -> BeaconChain:
    """The chain new beacon-mode games commit to: drand's quicknet, or POKNA_BEACON_CHAIN_FILE's."""
    if settings.beacon_chain_file is None:
        return QUICKNET
    return BeaconChain.from_drand_info(json.loads(settings.beacon_chain_file.read_text(encoding="utf-8")))


class BeaconUnavailable(PoknaError):
    """No relay served a verified round in time: the beacon (or every relay) is out. The roll waits."""

    code = "beacon_unavailable"
    status = 503
    title = "Randomness beacon unavailable"
    headers: ClassVar[dict[str, str]] = {"Retry-After": "3"}


@dataclass
class BeaconRelays:
    """One chain, several relays. `clock` (epoch seconds) is a parameter so tests can steer it.

    Asked on httpx's async client, in the caller's event loop: a request waiting for its round holds no
    thread. A client of its own for each ask or wait (a client's connections belong to the loop they were
    opened in, and the sweep and the API run in different loops), so a wait costs one connection to a
    relay, kept for its polls."""

    urls: Sequence[str]
    chain: BeaconChain
    request_timeout_seconds: float = 2.0
    margin_seconds: float = 2.0
    clock: Callable[[], float] = time.time

    @classmethod
    def for_settings(cls, settings: Settings) -> BeaconRelays:
        """The relays of POKNA_BEACON_URLS, for the chain new beacon-mode games commit to."""
        return cls(
            urls=settings.beacon_urls,
            chain=beacon_chain(settings),
            request_timeout_seconds=settings.beacon_request_timeout_seconds,
            margin_seconds=settings.beacon_wait_margin_seconds,
        )

    def now_ms(self) -> int:
        return int(self.clock() * 1000)

    def due_within_a_period(self, round_number: int) -> bool:
        """Whether `round_number` is published by one period from now: worth waiting for in a request."""
        return round_published_at_ms(self.chain, round_number) <= self.now_ms() + self.chain.period * 1000

    async def latest(self) -> BeaconRound:
        """The newest round a relay serves, verified. Raises BeaconUnavailable if no relay serves one."""
        async with _client() as client:
            beacon_round, problems = await self._ask(client, "public/latest", None)
        if beacon_round is None:
            raise BeaconUnavailable("no drand relay served its latest round: " + "; ".join(problems))
        return beacon_round

    async def get(self, round_number: int) -> BeaconRound | None:
        """Round `round_number`, verified, if a relay serves it now; None if none does (yet)."""
        async with _client() as client:
            return (await self._ask(client, f"public/{round_number}", round_number))[0]

    async def wait_for(self, round_number: int) -> BeaconRound:
        """Round `round_number` as soon as a relay serves it, waiting until its due time plus the margin, and
        never longer than one period plus the margin from now (a round named further ahead is refused at
        once, rather than holding a request for it)."""
        now_ms = self.now_ms()
        due_ms = round_published_at_ms(self.chain, round_number)
        if due_ms > now_ms + self.chain.period * 1000:
            raise BeaconUnavailable(f"round {round_number} is due more than one period from now")
        deadline_ms = min(due_ms, now_ms + self.chain.period * 1000) + int(self.margin_seconds * 1000)
        async with _client() as client:
            while True:
                # Asked before its due time too: a relay whose clock runs a little ahead serves it sooner.
                beacon_round, problems = await self._ask(client, f"public/{round_number}", round_number)
                if beacon_round is not None:
                    return beacon_round
                left_ms = deadline_ms - self.now_ms()
                if left_ms <= 0:
                    break
                await asyncio.sleep(min(POLL_SECONDS * 1000, left_ms) / 1000)
        detail = "; ".join(problems)
        raise BeaconUnavailable(
            f"drand round {round_number} was not published by any relay within {self.margin_seconds:g} s "
            f"of its due time ({detail}): the beacon is out, the roll waits for it",
            round=round_number,
        )

    async def _ask(
        self, client: httpx.AsyncClient, path: str, round_number: int | None
    ) -> tuple[BeaconRound | None, list[str]]:
        """The first verified answer of the relays in order, and why each earlier one was not used."""
        problems = []
        for url in self.urls:
            target = f"{url.rstrip('/')}/{self.chain.chain_hash}/{path}"
            try:
                answer = await client.get(target, timeout=self.request_timeout_seconds)
            except httpx.HTTPError as error:
                problems.append(f"{url}: {type(error).__name__}")
                continue
            if answer.status_code != 200:
                problems.append(f"{url}: HTTP {answer.status_code}")
                continue
            try:
                beacon_round = BeaconRound.read(JsonReader(answer.json()))
                if round_number is not None and beacon_round.round != round_number:
                    raise BeaconError(f"asked for round {round_number}, got round {beacon_round.round}")
                return verify_round(self.chain, beacon_round), problems
            except (ValueError, MalformedProofError, BeaconError) as error:
                problems.append(f"{url}: {error}")
        return None, problems


def _client() -> httpx.AsyncClient:
    return httpx.AsyncClient(follow_redirects=False)
