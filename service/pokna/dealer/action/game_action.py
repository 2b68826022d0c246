"""The dealer's one way in for whatever moves a game on: a player's action, a waiting beacon roll's
resolution, the deadlines a read or the sweep finds passed. Each is one transaction of
pokna.dealer.action.action_transaction (lock and read, decide, write), with what comes around it here.

A player's action (`act`), in three round trips, no thread, no ORM, in the keyed transaction
(pokna.idempotency.keyed):

1. Authenticate the API key and claim the Idempotency-Key, in one autocommit statement. Without a key
   there is nothing to claim, and the key is checked by the next round trip instead.
2. BEGIN, hold the claim (or authenticate) and lock the game with its seats and balances: one pipeline.
3. Decide in Python, build the answer once, and send everything it writes as one game_write() call with
   COMMIT behind it in the same pipeline. The answer's bytes are what is sent and stored for replay.

The rare paths cost more and say so: a key seen before (pokna.idempotency.service.claim_existing), a game
ended by a chain of passed deadlines the lock did not foresee, a step that rakes (the revenue account is
read, and opened the first time), a wallet that moved after the read (decided again from step 2), and in
beacon mode the wait for the round after the acceptance committed, then its resolution in a transaction of
its own.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import AsyncConnection

from pokna import metrics
from pokna.db.types import utc_now
from pokna.dealer.action.action_transaction import Committed, Dealer, run
from pokna.dealer.action.answer import ACCEPTED
from pokna.dealer.action.decision import Act, CatchUp, Resolve
from pokna.dealer.action.locked import Clock
from pokna.dealer.beacon_rolls import RollPending
from pokna.dealer.requests import PlayerRequest
from pokna.dealer.store_postgres import DEADLINE_AND_ROUND
from pokna.dealer.writes import StaleBalances
from pokna.drand import BeaconRelays, BeaconUnavailable
from pokna.errors import NotFound, PoknaError, WalletHeld
from pokna.idempotency.keyed import Answer, Caller, Claim, Keyed, keyed
from pokna_verify.invariant import present

log = logging.getLogger("pokna.dealer")


async def act(
    connection: AsyncConnection[Any],
    dealer: Dealer,
    clock: Clock,
    caller: Caller,
    sent: Keyed | None,
    game_id: str,
    request: PlayerRequest,
    beacon: BeaconRelays | None = None,
) -> Answer:
    """`beacon`: the relays a beacon-mode game's rounds are read from. Without them a drawing action in
    such a game is accepted and answered 202, and `pokna sweep` resolves it."""
    try:
        played = await _act_resolving(connection, dealer, clock, caller, sent, game_id, request, beacon)
    except PoknaError as refusal:
        metrics.game_action(request.type, refusal.code)
        raise
    if not played.replayed:
        metrics.game_action(request.type, "roll_pending" if played.status == ACCEPTED else "ok")
    return played


async def _act_resolving(
    connection: AsyncConnection[Any],
    dealer: Dealer,
    clock: Clock,
    caller: Caller,
    sent: Keyed | None,
    game_id: str,
    request: PlayerRequest,
    beacon: BeaconRelays | None,
) -> Answer:
    """The action; in beacon mode, its round awaited and the action resolved with it. An action that
    finds an earlier accepted roll whose round is due resolves that one first, then is played once more."""
    try:
        played = await _act_once(connection, dealer, clock, caller, sent, game_id, request)
    except RollPending as pending:
        if beacon is None or pending.tenant_id is None:
            raise
        round_number = int(pending.extensions["beacon_round"])
        if not beacon.due_within_a_period(round_number):
            raise
        await _await_and_resolve(connection, dealer, clock, beacon, pending.tenant_id, game_id, round_number)
        # Played again by the clock of now: the wait took time, and the action is accepted after it.
        clock = clock.restarted(utc_now())
        played = await _act_once(connection, dealer, clock, caller, sent, game_id, request)
    if isinstance(played, Answer):  # the key's stored answer
        return played
    answer, waiting_round = _answered(played), played.decision.writes.accepted_round
    if waiting_round is None or beacon is None:
        return answer
    try:
        resolved = await _await_and_resolve(
            connection, dealer, clock, beacon, played.tenant_id, game_id, waiting_round
        )
    except (PoknaError, StaleBalances, psycopg.Error):
        # The acceptance is committed and stored: its 202 is this request's answer, and the roll resolves
        # on the next action or the sweep.
        log.warning(
            "a beacon roll accepted in game %s was not resolved by its request", game_id, exc_info=True
        )
        return answer
    return answer if resolved is None else resolved


async def _act_once(
    connection: AsyncConnection[Any],
    dealer: Dealer,
    clock: Clock,
    caller: Caller,
    sent: Keyed | None,
    game_id: str,
    request: PlayerRequest,
) -> Committed | Answer:
    """The action written under its claimed key (the key checked in the action's transaction when none
    was sent), or the key's stored answer."""

    async def play(caller: Caller, claim: Claim | None) -> Committed:
        intent = Act(request, None if claim is None else claim.key)
        written = await run(connection, dealer, clock, caller, claim, game_id, intent)
        return present(written, "a write (an action always writes)")

    return await keyed(connection, caller, sent, play, check_in_transaction=True)


async def _await_and_resolve(
    connection: AsyncConnection[Any],
    dealer: Dealer,
    clock: Clock,
    beacon: BeaconRelays,
    tenant_id: str,
    game_id: str,
    round_number: int,
) -> Answer | None:
    """Wait for the round (awaited: the relays' client is async), then resolve the game's waiting action
    in a transaction of its own, its answer stored under the key of the request that accepted it
    (pokna.dealer.beacon_rolls.release). None if the beacon is out (the roll stays pending: the answer is
    the 202 of its acceptance) or someone resolved it first (and stored its answer under that key)."""
    try:
        beacon_round = await beacon.wait_for(round_number)
    except BeaconUnavailable:
        return None
    clock = clock.restarted(utc_now())  # resolved now, its next turn timed from now
    written = await run(
        connection, dealer, clock, Caller(tenant_id=tenant_id), None, game_id, Resolve(beacon_round)
    )
    return None if written is None or written.body is None else _answered(written)


def _answered(written: Committed) -> Answer:
    body = present(written.body, "an answer (an action always answers)")
    return Answer(written.status, body.encode(), replayed=False)


@dataclass(frozen=True)
class DueApplied:
    timeouts: int
    rolls_resolved: int


async def apply_due(
    connection: AsyncConnection[Any],
    dealer: Dealer,
    clock: Clock,
    tenant_id: str,
    game_id: str,
    beacon: BeaconRelays | None = None,
) -> DueApplied:
    """Every deadline of the game that has passed by `clock.now`, applied (`pokna sweep`). A beacon-mode
    game whose accepted roll nobody waited for is resolved instead, if its round is served (asked before
    the lock)."""
    row = await (
        await connection.execute(DEADLINE_AND_ROUND, {"tenant_id": tenant_id, "game_id": game_id})
    ).fetchone()
    if row is None:
        raise NotFound(f"no game {game_id}")
    deadline_at, round_number = row
    if deadline_at is None or deadline_at > clock.now:
        return DueApplied(0, 0)  # the common case: no lock taken, nothing written
    caller = Caller(tenant_id=tenant_id)
    if round_number is not None:
        beacon_round = None if beacon is None else await beacon.get(round_number)
        if beacon_round is None:
            return DueApplied(0, 0)  # the beacon is out, or not reachable from here: the roll waits
        resolving = clock.restarted(utc_now())  # resolved now: its next turn is timed from now
        written = await run(connection, dealer, resolving, caller, None, game_id, Resolve(beacon_round))
        return DueApplied(0, 0 if written is None or written.decision.answer is None else 1)
    try:
        written = await run(connection, dealer, clock, caller, None, game_id, CatchUp())
    except WalletHeld:  # a seat's wallet waits on another game's beacon roll: the next sweep applies it
        return DueApplied(0, 0)
    return DueApplied(0 if written is None else len(written.decision.timed_out), 0)


async def catch_up(
    connection: AsyncConnection[Any], dealer: Dealer, clock: Clock, tenant_id: str, game_id: str
) -> None:
    """The deadlines a read (pokna.dealer.reading) or a table's next round found passed, applied before it
    reads again: its answer is the game as of `clock.now`. A game whose seat's wallet a waiting beacon roll
    of another game holds is caught up after that roll resolves."""
    try:
        await run(connection, dealer, clock, Caller(tenant_id=tenant_id), None, game_id, CatchUp())
    except WalletHeld:
        return
