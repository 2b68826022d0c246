"""Deciding, on the game as locked: what a request, a waiting beacon roll or a passed deadline does.

`decide` takes the game as locked (pokna.dealer.locked.LockedGame) and what is asked of it (`Intent`),
and returns the `Decision`: every write gathered (pokna.dealer.writes.GameWrites) and the answer. Nothing
here does I/O; a decision that needs a read the lock did not make raises NeedsRead, and
pokna.dealer.action_transaction makes it and decides again. The parts: the deadlines that passed (here,
`apply_passed_deadlines`), the beacon draw (pokna.dealer.beacon_rolls), the rules step
(pokna.dealer.rules_step); the answer's shape is pokna.dealer.answer's.

Deadlines: every waiting turn has one, and an open game has one for its start. They apply lazily
(whoever touches a game first after a deadline makes it happen: an action, a read, a table's next round)
and in bulk (`pokna sweep` lists the due games and applies each), each at its own deadline, so an
abandoned game catches up in one touch exactly as if someone had been watching it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pokna.dealer.announcements import announce_client_seed_set
from pokna.dealer.answer import action_answer, rolls_out
from pokna.dealer.beacon_rolls import (
    RollPending,
    accept,
    chain_of,
    draws_rolls,
    pending_action,
    pending_round,
    refuse_while_pending,
    release,
)
from pokna.dealer.errors import ClientSeedLocked, NotSeated, VersionConflict
from pokna.dealer.locked import LockedGame
from pokna.dealer.records import SeatRecord
from pokna.dealer.requests import PlayerRequest, SetClientSeedAction
from pokna.dealer.rules_step import BeaconDraw, apply_step, number_events
from pokna.dealer.schemas import ActionRollOut, GameActionOut
from pokna.dealer.writes import GameWrites
from pokna.errors import InvalidRequest, PoknaError
from pokna_verify.fairness.beacon import BeaconRound, verify_round
from pokna_verify.fairness.protocol import client_seed_problem
from pokna_verify.game import Timeout, state_from_dict, turn
from pokna_verify.game.events import TimedOut


@dataclass(frozen=True)
class Act:
    """A player's request (or the Vigo's, or a cancel), after any deadline that passed."""

    request: PlayerRequest


@dataclass(frozen=True)
class Resolve:
    """The game's waiting beacon-mode action, with the round it waits for (verified against the game's
    chain here again)."""

    beacon_round: BeaconRound


@dataclass(frozen=True)
class CatchUp:
    """The deadlines passed by the clock's `now`, and nothing else: a read's touch, the sweep."""


Intent = Act | Resolve | CatchUp


@dataclass
class Decision:
    writes: GameWrites
    answer: GameActionOut | None = None
    """None: nothing to answer (a catch-up; a beacon roll somebody else resolved first)."""
    timed_out: list[dict[str, Any]] = field(default_factory=list)
    """The passed deadlines applied, one entry each."""


def decide(locked: LockedGame, intent: Intent, answer_key: str | None = None) -> Decision:
    """`answer_key`: the Idempotency-Key the answer is stored under (a resolution's is the accepting
    request's, recorded with its acceptance)."""
    writes = GameWrites(locked.game.tenant_id, answer_key=answer_key)
    if isinstance(intent, Act):
        return _act(locked, writes, intent.request)
    if isinstance(intent, Resolve):
        return Decision(writes, _resolve(locked, writes, intent.beacon_round))
    if locked.game.pending_roll is not None:
        return Decision(writes)  # waiting for its round: not a turn that can time out
    return Decision(writes, timed_out=apply_passed_deadlines(locked, writes, locked.clock.now))


def _act(locked: LockedGame, writes: GameWrites, request: PlayerRequest) -> Decision:
    """The game after the action, with the rolls the action made. Deadlines passed meanwhile are applied
    first (their rolls are in the game's events, not in this answer)."""
    if locked.game.pending_roll is not None:
        refuse_while_pending(locked)
    timed_out = apply_passed_deadlines(locked, writes, locked.clock.for_deadlines().now)
    try:
        if (
            locked.game.pending_roll is not None
        ):  # a passed deadline's roll was accepted: written all the same
            try:
                refuse_while_pending(locked)
            except RollPending as pending:
                pending.kept = writes
                raise
        return Decision(writes, _act_now(locked, writes, request), timed_out)
    except PoknaError as refusal:
        if timed_out:
            _say_it_timed_out(refusal, timed_out)
        raise


def _resolve(locked: LockedGame, writes: GameWrites, beacon_round: BeaconRound) -> GameActionOut | None:
    """The waiting action resolved with its round; None if it was resolved already (by the sweep, or a
    request that waited too)."""
    game = locked.game
    chain = chain_of(game)
    if chain is None or game.pending_roll is None or pending_round(game) != beacon_round.round:
        return None
    verify_round(chain, beacon_round)
    action, accepted_at, accepted_balances = pending_action(game)
    release(locked, writes)
    draw = BeaconDraw(beacon_round, accepted_at, accepted_balances)
    result = apply_step(locked, writes, action, locked.clock.now, beacon=draw)
    assert writes.shown is not None
    return action_answer(writes.shown, rolls_out(result, locked.seats))


def _say_it_timed_out(refusal: PoknaError, timed_out: list[dict[str, Any]]) -> None:
    """A refusal that follows a passed deadline says so first: the client acted on a turn that was gone."""
    what = "; ".join(
        f"{entry['applied']} for {', '.join(entry['account_ids']) or 'the game'} at {entry['deadline_at']}"
        for entry in timed_out
    )
    refusal.detail = f"the turn timed out before this action (applied: {what}); {refusal.detail}"
    refusal.extensions["timed_out"] = timed_out


def _act_now(locked: LockedGame, writes: GameWrites, request: PlayerRequest) -> GameActionOut:
    game, seats = locked.game, locked.seats
    if request.expected_version is not None and request.expected_version != game.version:
        raise VersionConflict(
            f"expected version {request.expected_version}, the game is at {game.version}",
            game=locked.shown(),
        )
    rolls: list[ActionRollOut] = []
    if isinstance(request, SetClientSeedAction):
        _set_client_seed(locked, writes, request)
    else:
        action = request.engine_action(lambda account_id: _seat_of(seats, account_id))
        chain = chain_of(game)
        state = state_from_dict(game.state)
        if chain is not None and draws_rolls(locked, state, action):
            return action_answer(accept(locked, writes, chain, state, action), [])
        result = apply_step(locked, writes, action, locked.clock.now)
        rolls = rolls_out(result, seats)
    # The game as the step's announcement showed it, built once: the same inputs, after the last step.
    return action_answer(writes.shown if writes.shown is not None else locked.shown(), rolls)


def _seat_of(seats: list[SeatRecord], account_id: str | None) -> int:
    for seat in seats:
        if seat.account_id == account_id:
            return seat.seat
    raise NotSeated(
        f"account {account_id} has no seat in this game",
        invalid_params=[
            {"name": "body.account_id", "reason": "not seated in this game", "pointer": "/account_id"}
        ],
    )


def _set_client_seed(locked: LockedGame, writes: GameWrites, request: SetClientSeedAction) -> None:
    game, seats, now = locked.game, locked.seats, locked.clock.now
    if game.status != "open":
        raise ClientSeedLocked("client seeds can be set only before the game starts", game=locked.shown())
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
    writes.shown = announce_client_seed_set(writes, game, seats, locked.balances, now)


def apply_passed_deadlines(locked: LockedGame, writes: GameWrites, until: datetime) -> list[dict[str, Any]]:
    """On the game as locked: each deadline passed by `until`, its default action stamped at that
    deadline. What was applied, one entry per deadline: when, in which phase, on behalf of which seats,
    and which action."""
    game, seats = locked.game, locked.seats
    applied: list[dict[str, Any]] = []
    # A beacon-mode roll accepted and waiting is not a turn that can time out: the sweep resolves it when
    # its round arrives (pokna.dealer.beacon_rolls), and the next turn's clock starts then.
    while game.pending_roll is None and game.turn_deadline_at is not None and game.turn_deadline_at <= until:
        deadline = game.turn_deadline_at
        chain = chain_of(game)
        state = state_from_dict(game.state)
        if chain is not None and draws_rolls(locked, state, Timeout()):
            # Beacon mode: the default roll is accepted now (not at the deadline, whose round may be out).
            accept(locked, writes, chain, state, Timeout())
            applied.append(
                {
                    "deadline_at": deadline.isoformat().replace("+00:00", "Z"),
                    "phase": state.phase.value,
                    "account_ids": [seats[seat].account_id for seat in turn(state).seats],
                    "applied": "roll",
                    "beacon_round": writes.accepted_round,
                }
            )
            break
        result = apply_step(locked, writes, Timeout(), deadline)
        for event in result.events:
            if isinstance(event, TimedOut):
                applied.append(
                    {
                        "deadline_at": deadline.isoformat().replace("+00:00", "Z"),
                        "phase": event.phase.value,
                        "account_ids": [seats[seat].account_id for seat in event.seats],
                        "applied": event.default_action,
                    }
                )
    return applied
