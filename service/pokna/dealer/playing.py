"""A player's action on the async path: three round trips, no thread, no ORM.

1. Authenticate the API key and claim the Idempotency-Key, in one autocommit statement
   (pokna.idempotency.service). Without a key there is nothing to claim, and the key is checked by the next
   round trip instead.
2. BEGIN, hold the claim (or authenticate) and lock the game with its seats and balances: three statements
   in one pipeline, one round trip.
3. Decide in Python (deadlines that passed, then the action: pokna.dealer.acting.decide_action), build the
   answer once, and send everything it writes as one game_write() call with COMMIT behind it in the same
   pipeline (pokna.dealer.writes). The answer's bytes are what is sent, stored for replay, and the
   announcements carry the same game as its `game`.

The lock of step 2 also reads what a proof signs when the game's next step may end it
(pokna.dealer.action_lock), so the action that ends a game costs no more. The rare paths cost more and say
so: a key seen before (pokna.idempotency.service.claim_existing), a game ended by a chain of passed deadlines the
lock did not foresee (its recorded events and rolls are read then), a first rake (the revenue account is
opened), a wallet that moved after the read (the action is decided again from step 2).
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass, replace
from typing import Any

import psycopg
from psycopg import AsyncConnection
from starlette.concurrency import run_in_threadpool

from pokna import metrics
from pokna.db.types import utc_now
from pokna.dealer.acting import decide_action, resolve_pending_roll
from pokna.dealer.action_transaction import (
    Caller,
    Claim,
    OpenRevenueAccount,
    Played,
    decide_and_write,
    revenue_account_opener,
)
from pokna.dealer.beacon_rolls import RollPending
from pokna.dealer.deadlines import Clock
from pokna.dealer.records import GameRecord, SeatRecord
from pokna.dealer.requests import PlayerRequest
from pokna.dealer.schemas import GameActionOut
from pokna.dealer.writes import (
    GameWrites,
    StaleBalances,
)
from pokna.drand import BeaconRelays, BeaconUnavailable
from pokna.errors import PoknaError
from pokna.idempotency import service as idempotency
from pokna.service_keys import ServiceKeys

__all__ = ["Caller", "Keyed", "Played", "play", "revenue_account_opener"]


log = logging.getLogger("pokna.dealer")


@dataclass(frozen=True)
class Keyed:
    key: str
    fingerprint: str


async def play(
    connection: AsyncConnection[Any],
    keys: ServiceKeys,
    clock: Clock,
    caller: Caller,
    keyed: Keyed | None,
    game_id: str,
    request: PlayerRequest,
    open_revenue_account: OpenRevenueAccount,
    beacon: BeaconRelays | None = None,
) -> Played:
    """`beacon`: the relays a beacon-mode game's rounds are read from (pokna.dealer.beacon_rolls). Without
    them a drawing action in such a game is accepted and answered 202, and `pokna sweep` resolves it."""
    try:
        played = await _play_resolving(
            connection, keys, clock, caller, keyed, game_id, request, open_revenue_account, beacon
        )
    except PoknaError as refusal:
        metrics.game_action(request.type, refusal.code)
        raise
    if not played.replayed:
        metrics.game_action(request.type, "ok" if played.waiting_round is None else "roll_pending")
    return played


async def _play_resolving(
    connection: AsyncConnection[Any],
    keys: ServiceKeys,
    clock: Clock,
    caller: Caller,
    keyed: Keyed | None,
    game_id: str,
    request: PlayerRequest,
    open_revenue_account: OpenRevenueAccount,
    beacon: BeaconRelays | None,
) -> Played:
    """The action; in beacon mode, its round awaited and the action resolved with it. An action that
    finds an earlier accepted roll whose round is due resolves that one first, then is played once more."""
    try:
        played = await _play(connection, keys, clock, caller, keyed, game_id, request, open_revenue_account)
    except RollPending as pending:
        if beacon is None or pending.tenant_id is None:
            raise
        round_number = int(pending.extensions["beacon_round"])
        if not beacon.due_within_a_period(round_number):
            raise
        await _await_and_resolve(
            connection,
            keys,
            clock,
            beacon,
            pending.tenant_id,
            game_id,
            round_number,
            open_revenue_account,
        )
        # Played again by the clock of now: the wait took time, and the action is accepted after it.
        clock = replace(clock, now=utc_now(), interrupted_at=None)
        played = await _play(connection, keys, clock, caller, keyed, game_id, request, open_revenue_account)
    if played.waiting_round is None or beacon is None or played.tenant_id is None:
        return played
    try:
        resolved = await _await_and_resolve(
            connection,
            keys,
            clock,
            beacon,
            played.tenant_id,
            game_id,
            played.waiting_round,
            open_revenue_account,
        )
    except (PoknaError, StaleBalances, psycopg.Error):
        # The acceptance is committed and stored: its 202 is this request's answer, and the roll resolves
        # on the next action or the sweep.
        log.warning(
            "a beacon roll accepted in game %s was not resolved by its request", game_id, exc_info=True
        )
        return played
    return played if resolved is None else resolved


async def _await_and_resolve(
    connection: AsyncConnection[Any],
    keys: ServiceKeys,
    clock: Clock,
    beacon: BeaconRelays,
    tenant_id: str,
    game_id: str,
    round_number: int,
    open_revenue_account: OpenRevenueAccount,
) -> Played | None:
    """Wait for the round (in a thread: the relays' client blocks), then resolve the game's waiting action
    in a transaction of its own, its answer stored under the key of the request that accepted it
    (pokna.dealer.beacon_rolls.release). None if the beacon is out (the roll stays pending: the answer is
    the 202 of its acceptance) or someone resolved it first (and stored its answer under that key)."""
    try:
        beacon_round = await run_in_threadpool(beacon.wait_for, round_number)
    except BeaconUnavailable:
        return None
    clock = replace(clock, now=utc_now(), interrupted_at=None)  # resolved now, its next turn timed from now

    def decide(
        writes: GameWrites, clock: Clock, game: GameRecord, seats: list[SeatRecord], balances: dict[str, int]
    ) -> GameActionOut | None:
        return resolve_pending_roll(writes, keys, clock, game, seats, balances, beacon_round)

    return await decide_and_write(
        connection,
        clock,
        Caller(tenant_id=tenant_id),
        None,
        game_id,
        decide,
        open_revenue_account,
        None,
    )


async def _play(
    connection: AsyncConnection[Any],
    keys: ServiceKeys,
    clock: Clock,
    caller: Caller,
    keyed: Keyed | None,
    game_id: str,
    request: PlayerRequest,
    open_revenue_account: OpenRevenueAccount,
) -> Played:
    def decide(
        writes: GameWrites, clock: Clock, game: GameRecord, seats: list[SeatRecord], balances: dict[str, int]
    ) -> GameActionOut:
        return decide_action(writes, keys, clock, game, seats, balances, request)

    if keyed is None:
        played = await decide_and_write(
            connection, clock, caller, None, game_id, decide, open_revenue_account, None
        )
        assert played is not None
        return played
    token = secrets.token_hex(16)
    started_at = utc_now()
    claimed = await idempotency.authenticate_and_claim(
        connection, caller.api_key_digest, caller.tenant_id, keyed.key, keyed.fingerprint, token, started_at
    )
    if claimed.stored is not None:
        stored = claimed.stored
        return Played(stored.status, str(stored.body).encode(), replayed=True)
    claim = Claim(claimed.tenant_id, keyed.key, token, started_at)
    try:
        played = await decide_and_write(
            connection, clock, caller, claim, game_id, decide, open_revenue_account, keyed.key
        )
    except BaseException:
        await idempotency.release(connection, claim.tenant_id, claim.key, token)
        raise
    assert played is not None
    return played
