"""Deciding, on the game as locked: what a request, a waiting beacon roll or a passed deadline does.

`decide` takes the game as locked (pokna.dealer.action.locked.LockedGame), what is asked of it (`Intent`) and
what it takes from the world (pokna.dealer.action.locked.Env: the moment, the ids, the randomness), and
returns the `Decision`, a value the transaction (pokna.dealer.action.action_transaction) matches on. Nothing
here does I/O, reads a clock or draws anything. The parts: the deadlines that passed (here,
`apply_passed_deadlines`), the beacon draw (pokna.dealer.beacon_rolls), the rules step
(pokna.dealer.action.rules_step); the answer is made from the last step's view (pokna.dealer.action.answer).

Deadlines: every waiting turn has one, and an open game has one for its start. They apply lazily
(whoever touches a game first after a deadline makes it happen: an action, a read, a table's next round)
and in bulk (`pokna sweep` lists the due games and applies each), each at its own deadline, so an
abandoned game catches up in one touch exactly as if someone had been watching it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, TypeVar

from pokna.dealer.action.answer import ActionAnswer, rolls_out
from pokna.dealer.action.locked import Env, LockedGame, NeedsRead
from pokna.dealer.action.rules_step import BeaconDraw, apply_step, number_events
from pokna.dealer.announcements import announce_turn
from pokna.dealer.beacon_rolls import (
    RollPending,
    accept,
    chain_of,
    draws_rolls,
    pending_action,
    pending_round,
    release,
    roll_pending,
)
from pokna.dealer.errors import ActionRefused, ClientSeedLocked, NotSeated, VersionConflict
from pokna.dealer.records import SeatRecord
from pokna.dealer.requests import PlayerRequest, SetClientSeedAction
from pokna.dealer.schemas import GameOut
from pokna.dealer.writes import GameWrites
from pokna.errors import InvalidRequest, PoknaError
from pokna.outbox import Gathered
from pokna_verify.fairness.beacon import BeaconRound, verify_round
from pokna_verify.fairness.protocol import client_seed_problem
from pokna_verify.game import GameOver, Timeout, state_from_dict, turn
from pokna_verify.game.events import TimedOut
from pokna_verify.game.model import FINAL_PHASES

Refusal = TypeVar("Refusal", bound=PoknaError)
FINAL_STATUSES = frozenset(phase.value for phase in FINAL_PHASES)
"""A game's `status` once it has ended: its final phase's name (pokna.dealer.view.status_of)."""


@dataclass(frozen=True)
class Act:
    """A player's request (or the Vigo's, or a cancel), after any deadline that passed. `answer_key`: the
    Idempotency-Key its answer is stored under."""

    request: PlayerRequest
    answer_key: str | None = None


@dataclass(frozen=True)
class Resolve:
    """The game's waiting beacon-mode action, with the round it waits for (verified against the game's
    chain here again). Its answer is stored under the accepting request's key, recorded with the
    acceptance."""

    beacon_round: BeaconRound


@dataclass(frozen=True)
class CatchUp:
    """The deadlines passed by the clock's `now`, and nothing else: a read's touch, the sweep."""


Intent = Act | Resolve | CatchUp


@dataclass(frozen=True)
class Written:
    """Decided: `writes` to write and commit (none at all: nothing to do), the game as the decision left
    it, and the answer."""

    locked: LockedGame
    writes: GameWrites
    answer: ActionAnswer | None = None
    """None: nothing to answer (a catch-up; a beacon roll somebody else resolved first)."""
    timed_out: tuple[dict[str, Any], ...] = ()
    """The passed deadlines applied, one entry each."""


@dataclass(frozen=True)
class PendingBeaconRound:
    """Refused: the game's accepted roll waits for its drand round. `kept`: what was decided before the
    refusal (a passed deadline's roll accepted), written all the same; often nothing."""

    refusal: RollPending
    kept: GameWrites


@dataclass(frozen=True)
class Refused:
    """Refused (not the player's turn, a stale version, an action the rules refuse...): nothing written."""

    refusal: PoknaError


Decision = Written | PendingBeaconRound | NeedsRead | Refused


def decide(locked: LockedGame, intent: Intent, env: Env) -> Decision:
    """`locked` is never changed: each step makes the game after it (a decision made again after a read
    starts from the same value)."""
    answer_key = intent.answer_key if isinstance(intent, Act) else None
    writes = GameWrites(locked.game.tenant_id, outbox=Gathered(env.new_id), answer_key=answer_key)
    try:
        match intent:
            case Act(request=request):
                return _act(locked, writes, request, env)
            case Resolve(beacon_round=beacon_round):
                return _resolve(locked, writes, beacon_round, env)
            case CatchUp():
                if locked.game.pending_roll is not None:
                    return Written(locked, writes)  # waiting for its round: not a turn that can time out
                caught_up = apply_passed_deadlines(locked, writes, locked.clock.now, env)
                if isinstance(caught_up, NeedsRead):
                    return caught_up
                after, timed_out = caught_up
                return Written(after, writes, timed_out=tuple(timed_out))
    except PoknaError as refusal:
        return Refused(refusal)


def _act(locked: LockedGame, writes: GameWrites, request: PlayerRequest, env: Env) -> Decision:
    """The game after the action, with the rolls the action made. Deadlines passed meanwhile are applied
    first (their rolls are in the game's events, not in this answer)."""
    if locked.game.pending_roll is not None:
        return PendingBeaconRound(roll_pending(locked), writes)
    caught_up = apply_passed_deadlines(locked, writes, locked.clock.for_deadlines().now, env)
    if isinstance(caught_up, NeedsRead):
        return caught_up
    locked, timed_out = caught_up
    try:
        if locked.game.pending_roll is not None:  # a passed deadline's roll was accepted: kept, then refused
            return PendingBeaconRound(_after(timed_out, roll_pending(locked)), writes)
        acted = _act_now(locked, writes, request, env)
    except PoknaError as refusal:
        return Refused(_after(timed_out, refusal))
    if isinstance(acted, NeedsRead):
        return acted
    after, answer = acted
    return Written(after, writes, answer, tuple(timed_out))


def _resolve(locked: LockedGame, writes: GameWrites, beacon_round: BeaconRound, env: Env) -> Decision:
    """The waiting action resolved with its round; nothing to answer if it was resolved already (by the
    sweep, or a request that waited too)."""
    game = locked.game
    chain = chain_of(game)
    if chain is None or game.pending_roll is None or pending_round(game) != beacon_round.round:
        return Written(locked, writes)
    verify_round(chain, beacon_round)
    action, accepted_at, accepted_balances = pending_action(game)
    draw = BeaconDraw(beacon_round, accepted_at, accepted_balances)
    stepped = apply_step(release(locked, writes), writes, action, locked.clock.now, env, beacon=draw)
    if isinstance(stepped, NeedsRead):
        return stepped
    answer = ActionAnswer(stepped.shown, rolls_out(stepped.result, locked.seats))
    return Written(stepped.locked, writes, answer)


def _after(timed_out: list[dict[str, Any]], refusal: Refusal) -> Refusal:
    """A refusal that follows a passed deadline says so first: the client acted on a turn that was gone."""
    if not timed_out:
        return refusal
    what = "; ".join(
        f"{entry['applied']} for {', '.join(entry['account_ids']) or 'the game'} at {entry['deadline_at']}"
        for entry in timed_out
    )
    refusal.detail = f"the turn timed out before this action (applied: {what}); {refusal.detail}"
    refusal.extensions["timed_out"] = timed_out
    return refusal


def _act_now(
    locked: LockedGame, writes: GameWrites, request: PlayerRequest, env: Env
) -> tuple[LockedGame, ActionAnswer] | NeedsRead:
    """The game after the action, and the answer: the game as the action's step left it
    (pokna.dealer.view.game_out, built once by the step), with the rolls the action made."""
    game, seats = locked.game, locked.seats
    if request.expected_version is not None and request.expected_version != game.version:
        raise VersionConflict(
            f"expected version {request.expected_version}, the game is at {game.version}",
            game=locked.shown(),
        )
    if isinstance(request, SetClientSeedAction):
        after, shown = _set_client_seed(locked, writes, request)
        return after, ActionAnswer(shown, [])
    action = request.engine_action(lambda account_id: _seat_of(seats, account_id))
    chain = chain_of(game)
    state = state_from_dict(game.state)
    if chain is not None and draws_rolls(locked, state, action):
        after, shown = accept(locked, writes, chain, state, action, env)
        return after, ActionAnswer(shown, [])
    stepped = apply_step(locked, writes, action, locked.clock.now, env, state=state)
    if isinstance(stepped, NeedsRead):
        return stepped
    return stepped.locked, ActionAnswer(stepped.shown, rolls_out(stepped.result, seats))


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
    locked: LockedGame, writes: GameWrites, request: SetClientSeedAction
) -> tuple[LockedGame, GameOut]:
    game, seats, now = locked.game, locked.seats, locked.clock.now
    if game.status in FINAL_STATUSES:  # as the rules refuse any other action on an ended game
        raise ActionRefused(GameOver(game.status), locked.shown())
    if game.status != "open":
        raise ClientSeedLocked("client seeds can be set only before the game starts", game=locked.shown())
    if (problem := client_seed_problem(request.client_seed)) is not None:
        raise InvalidRequest(problem, field="body.client_seed")
    index = _seat_of(seats, request.account_id)
    seat = replace(seats[index], client_seed=request.client_seed, client_seed_source="player")
    previous_version = game.version
    game, events = number_events(
        replace(game, version=game.version + 1),
        now,
        [("client_seed_set", {"seat": seat.seat, "client_seed": request.client_seed})],
    )
    writes.save_step(game, previous_version=previous_version, events=events, rolls=[], seeded=[seat])
    after = replace(locked, game=game, seats=(*seats[:index], seat, *seats[index + 1 :]))
    shown = after.shown()
    announce_turn(writes, game, shown, now)
    return after, shown


def apply_passed_deadlines(
    locked: LockedGame, writes: GameWrites, until: datetime, env: Env
) -> tuple[LockedGame, list[dict[str, Any]]] | NeedsRead:
    """On the game as locked: each deadline passed by `until`, its default action stamped at that
    deadline. The game after them, and what was applied, one entry per deadline: when, in which phase,
    on behalf of which seats, and which action."""
    seats = locked.seats
    applied: list[dict[str, Any]] = []
    # A beacon-mode roll accepted and waiting is not a turn that can time out: the sweep resolves it when
    # its round arrives (pokna.dealer.beacon_rolls), and the next turn's clock starts then.
    while True:
        game = locked.game
        deadline = game.turn_deadline_at
        if game.pending_roll is not None or deadline is None or deadline > until:
            return locked, applied
        chain = chain_of(game)
        state = state_from_dict(game.state)
        if chain is not None and draws_rolls(locked, state, Timeout()):
            # Beacon mode: the default roll is accepted now (not at the deadline, whose round may be out).
            locked, _ = accept(locked, writes, chain, state, Timeout(), env)
            applied.append(
                {
                    "deadline_at": deadline.isoformat().replace("+00:00", "Z"),
                    "phase": state.phase.value,
                    "account_ids": [seats[seat].account_id for seat in turn(state).seats],
                    "applied": "roll",
                    "beacon_round": writes.accepted_round,
                }
            )
            return locked, applied
        stepped = apply_step(locked, writes, Timeout(), deadline, env)
        if isinstance(stepped, NeedsRead):
            return stepped
        locked = stepped.locked
        for event in stepped.result.events:
            if isinstance(event, TimedOut):
                applied.append(
                    {
                        "deadline_at": deadline.isoformat().replace("+00:00", "Z"),
                        "phase": event.phase.value,
                        "account_ids": [seats[seat].account_id for seat in event.seats],
                        "applied": event.default_action,
                    }
                )
