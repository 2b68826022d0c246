"""Acting in a game: one player's request, checked against the seats and the version the client saw,
then applied as one rules step under the game's lock (or, before the start, a client seed recorded)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from pokna.db.types import utc_now
from pokna.dealer.announcements import announce_client_seed_set
from pokna.dealer.beacon_rolls import (
    BeaconDraw,
    RollPending,
    accept,
    chain_of,
    draws_rolls,
    pending_action,
    pending_round,
    refuse_while_pending,
    release,
)
from pokna.dealer.deadlines import Clock, apply_passed_deadlines
from pokna.dealer.errors import ClientSeedLocked, NotSeated, VersionConflict
from pokna.dealer.records import GameRecord, SeatRecord
from pokna.dealer.requests import PlayerRequest, SetClientSeedAction
from pokna.dealer.schemas import ActionRollOut, GameActionOut
from pokna.dealer.stepping import apply_step, number_events
from pokna.dealer.view import game_out
from pokna.dealer.writes import GameWrites
from pokna.errors import InvalidRequest, PoknaError
from pokna.service_keys import ServiceKeys
from pokna_verify.fairness.beacon import BeaconRound, verify_round
from pokna_verify.fairness.protocol import client_seed_problem
from pokna_verify.game import StepResult, state_from_dict
from pokna_verify.game.events import Rolled


def decide_action(
    writes: GameWrites,
    keys: ServiceKeys,
    clock: Clock,
    game: GameRecord,
    seats: Sequence[SeatRecord],
    balances: dict[str, int],
    request: PlayerRequest,
) -> GameActionOut:
    """The game after the action, with the rolls the action made, decided under the game's lock and
    gathered in `writes`. Deadlines passed meanwhile are applied first (their rolls are in the game's
    events, not in this answer)."""
    if game.pending_roll is not None:
        refuse_while_pending(game, seats, balances)
    timed_out = apply_passed_deadlines(writes, keys, clock.for_deadlines(), game, seats, balances)
    try:
        if game.pending_roll is not None:  # a passed deadline's roll was accepted: it is written all the same
            try:
                refuse_while_pending(game, seats, balances)
            except RollPending as pending:
                pending.kept = writes
                raise
        return _act_now(writes, keys, clock, game, seats, balances, request)
    except PoknaError as refusal:
        if timed_out:
            _say_it_timed_out(refusal, timed_out)
        raise


def resolve_pending_roll(
    writes: GameWrites,
    keys: ServiceKeys,
    clock: Clock,
    game: GameRecord,
    seats: Sequence[SeatRecord],
    balances: dict[str, int],
    beacon_round: BeaconRound,
) -> GameActionOut | None:
    """The game's waiting beacon-mode action, resolved with its round (verified again against the game's
    chain); None if it was resolved already (by the sweep, or a request that waited too)."""
    chain = chain_of(game)
    if chain is None or game.pending_roll is None or pending_round(game) != beacon_round.round:
        return None
    verify_round(chain, beacon_round)
    clock = replace(
        clock, now=utc_now(), interrupted_at=None
    )  # resolved now: its next turn is timed from now
    action, accepted_at, accepted_balances = pending_action(game)
    release(writes, game, seats)
    draw = BeaconDraw(beacon_round, accepted_at, accepted_balances)
    result = apply_step(writes, keys, clock, game, seats, balances, action, clock.now, beacon=draw)
    assert writes.shown is not None
    return GameActionOut.model_construct(**dict(writes.shown), rolls=_rolls_of(result, seats))


def _say_it_timed_out(refusal: PoknaError, timed_out: list[dict[str, Any]]) -> None:
    """A refusal that follows a passed deadline says so first: the client acted on a turn that was gone."""
    what = "; ".join(
        f"{entry['applied']} for {', '.join(entry['account_ids']) or 'the game'} at {entry['deadline_at']}"
        for entry in timed_out
    )
    refusal.detail = f"the turn timed out before this action (applied: {what}); {refusal.detail}"
    refusal.extensions["timed_out"] = timed_out


def _act_now(
    writes: GameWrites,
    keys: ServiceKeys,
    clock: Clock,
    game: GameRecord,
    seats: Sequence[SeatRecord],
    balances: dict[str, int],
    request: PlayerRequest,
) -> GameActionOut:
    if request.expected_version is not None and request.expected_version != game.version:
        raise VersionConflict(
            f"expected version {request.expected_version}, the game is at {game.version}",
            game=game_out(game, seats, balances),
        )
    rolls: list[ActionRollOut] = []
    if isinstance(request, SetClientSeedAction):
        _set_client_seed(writes, game, seats, balances, request, clock.now)
    else:
        action = request.engine_action(lambda account_id: _seat_of(seats, account_id))
        chain = chain_of(game)
        state = state_from_dict(game.state)
        if chain is not None and draws_rolls(game, seats, balances, state, action):
            shown = accept(writes, keys, chain, game, seats, balances, state, action)
            return GameActionOut.model_construct(**dict(shown), rolls=[])
        result = apply_step(writes, keys, clock, game, seats, balances, action, clock.now)
        rolls = _rolls_of(result, seats)
    # The game as the step's announcement showed it, built once: the same inputs, after the last step.
    shown = writes.shown if writes.shown is not None else game_out(game, seats, balances)
    return GameActionOut.model_construct(**dict(shown), rolls=rolls)


def _rolls_of(result: StepResult, seats: Sequence[SeatRecord]) -> list[ActionRollOut]:
    return [
        ActionRollOut(
            nonce=event.nonce,
            seat=event.seat,
            account_id=seats[event.seat].account_id,
            purpose=event.purpose.value,
            face=event.face,
            color=event.color.value,
            in_favor=event.in_favor,
        )
        for event in result.events
        if isinstance(event, Rolled)
    ]


def _seat_of(seats: Sequence[SeatRecord], account_id: str | None) -> int:
    for seat in seats:
        if seat.account_id == account_id:
            return seat.seat
    raise NotSeated(
        f"account {account_id} has no seat in this game",
        invalid_params=[
            {"name": "body.account_id", "reason": "not seated in this game", "pointer": "/account_id"}
        ],
    )


def _set_client_seed(
    writes: GameWrites,
    game: GameRecord,
    seats: Sequence[SeatRecord],
    balances: Mapping[str, int],
    request: SetClientSeedAction,
    now: datetime,
) -> None:
    if game.status != "open":
        raise ClientSeedLocked(
            "client seeds can be set only before the game starts", game=game_out(game, seats, balances)
        )
    if (problem := client_seed_problem(request.client_seed)) is not None:
        raise InvalidRequest(problem, field="body.client_seed")
    seat = seats[_seat_of(seats, request.account_id)]
    seat.client_seed = request.client_seed
    seat.client_seed_source = "player"
    previous_version = game.version
    game.version += 1
    events = number_events(
        game, now, [("client_seed_set", {"seat": seat.seat, "client_seed": request.client_seed})]
    )
    writes.save_step(game, previous_version=previous_version, events=events, rolls=[], seeded=[seat])
    writes.shown = announce_client_seed_set(writes, game, seats, balances, now)
