"""Deadlines: every waiting turn has one, and an open game has one for its start. They apply lazily
(whoever touches a game first after a deadline makes it happen, read or write) and in bulk
(`pokna sweep` lists the due games and applies each), each at its own deadline, so an abandoned game
catches up in one touch exactly as if someone had been watching it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.orm import Session

from pokna.dealer.beacon_rolls import accept, chain_of, draws_rolls, pending_round
from pokna.dealer.records import GameRecord, OverdueGames, SeatRecord
from pokna.dealer.stepping import apply_step
from pokna.dealer.store import game_store
from pokna.dealer.writes import GameWrites, decide_under_lock
from pokna.drand import BeaconRelays
from pokna.errors import WalletHeld
from pokna.service_keys import ServiceKeys
from pokna_verify.game import Timeout, state_from_dict, turn
from pokna_verify.game.events import TimedOut


@dataclass(frozen=True)
class Clock:
    """The moment a request or a sweep acts at, and how long an open game waits for its start."""

    now: datetime
    open_game_ttl: timedelta
    interrupted_at: datetime | None = None
    """For a retried action: when its first attempt began, which the service failed to finish."""

    def resuming(self, interrupted_at: datetime | None) -> Clock:
        """The clock of a retried action whose first attempt began at `interrupted_at` (None: not one)."""
        return replace(self, interrupted_at=interrupted_at)

    def for_deadlines(self) -> Clock:
        """The moment up to which deadlines apply before an action. A seat whose action was in flight
        when the service failed did not let its turn run out: deadlines that passed after the first
        attempt began (during the outage, or while the client waited to retry) are not applied before
        the retried action; it is decided as if it had arrived then, and stamped now."""
        if self.interrupted_at is None or self.interrupted_at >= self.now:
            return self
        return replace(self, now=self.interrupted_at)


def due_games(session: Session, tenant_id: str, now: datetime, limit: int) -> list[tuple[str, str]]:
    """(tenant id, game id) of up to `limit` of the tenant's games with a deadline passed at `now`, the
    longest overdue first: what `pokna sweep` applies, each with apply_due_timeouts in a transaction of
    its own."""
    return game_store(session).due_games(session, tenant_id, now, limit)


def overdue_games(session: Session, now: datetime) -> OverdueGames:
    """What `pokna sweep` (or the next request touching each game) has still to apply at `now`, across
    tenants: for `/metrics`, where an operator sees the sweeper stopped or the beacon's relays gone."""
    return game_store(session).overdue_games(session, now)


@dataclass(frozen=True)
class DueApplied:
    timeouts: int
    rolls_resolved: int


def apply_due_timeouts(
    session: Session,
    keys: ServiceKeys,
    clock: Clock,
    tenant_id: str,
    game_id: str,
    beacon: BeaconRelays | None = None,
) -> DueApplied:
    """Apply every deadline of the game that has passed; how many were applied. A beacon-mode game whose
    accepted roll nobody waited for is resolved instead, if its round is served (asked before the lock)."""
    store = game_store(session)
    if not _passed(store.turn_deadline(session, tenant_id, game_id), clock):
        return DueApplied(0, 0)  # the common case: no lock taken, nothing written
    game = store.get_game(session, tenant_id, game_id)
    round_number = pending_round(game)
    if round_number is not None:
        beacon_round = None if beacon is None else beacon.get(round_number)
        if beacon_round is None:
            return DueApplied(0, 0)  # the beacon is out, or not reachable from here: the roll waits
        from pokna.dealer.acting import resolve_pending_roll  # acting applies deadlines first

        resolved = decide_under_lock(
            session,
            tenant_id,
            game_id,
            lambda writes, game, seats, balances: resolve_pending_roll(
                writes, keys, clock, game, seats, balances, beacon_round
            ),
        )
        return DueApplied(0, 0 if resolved is None else 1)
    try:
        applied = decide_under_lock(
            session,
            tenant_id,
            game_id,
            lambda writes, game, seats, balances: apply_passed_deadlines(
                writes, keys, clock, game, seats, balances
            ),
        )
    except WalletHeld:  # a seat's wallet waits on another game's beacon roll: the next sweep applies it
        return DueApplied(0, 0)
    return DueApplied(len(applied), 0)


def caught_up(
    session: Session, keys: ServiceKeys, clock: Clock, tenant_id: str, game_id: str
) -> tuple[GameRecord, list[SeatRecord] | None]:
    """The game as of `clock.now`, for a read: as committed, unless one of its deadlines has passed, in
    which case it is locked and caught up in the caller's transaction (the read's own, which commits
    what the catch-up wrote). The seats come along when the catch-up read them."""
    store = game_store(session)
    game = store.get_game(session, tenant_id, game_id)
    if game.pending_roll is not None or not _passed(game.turn_deadline_at, clock):
        return game, None  # the common case: one query, no lock

    def catch_up(
        writes: GameWrites, game: GameRecord, seats: list[SeatRecord], balances: dict[str, int]
    ) -> tuple[GameRecord, list[SeatRecord]]:
        apply_passed_deadlines(writes, keys, clock, game, seats, balances)
        return game, seats

    try:
        return decide_under_lock(session, tenant_id, game_id, catch_up)
    except WalletHeld:  # a seat's wallet waits on another game's beacon roll: caught up after it resolves
        return game, None


def apply_passed_deadlines(
    writes: GameWrites,
    keys: ServiceKeys,
    clock: Clock,
    game: GameRecord,
    seats: Sequence[SeatRecord],
    balances: dict[str, int],
) -> list[dict[str, Any]]:
    """Under the game's lock: each passed deadline's default action, stamped at that deadline. What was
    applied, one entry per deadline: when, in which phase, on behalf of which seats, and which action."""
    applied: list[dict[str, Any]] = []
    # A beacon-mode roll accepted and waiting is not a turn that can time out: the sweep resolves it when
    # its round arrives (pokna.dealer.beacon_rolls), and the next turn's clock starts then.
    while (
        game.pending_roll is None and game.turn_deadline_at is not None and game.turn_deadline_at <= clock.now
    ):
        deadline = game.turn_deadline_at
        chain = chain_of(game)
        state = state_from_dict(game.state)
        if chain is not None and draws_rolls(game, seats, balances, state, Timeout()):
            # Beacon mode: the default roll is accepted now (not at the deadline, whose round may be out).
            accept(writes, keys, chain, game, seats, balances, state, Timeout())
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
        result = apply_step(writes, keys, clock, game, seats, balances, Timeout(), deadline)
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


def _passed(deadline: datetime | None, clock: Clock) -> bool:
    return deadline is not None and deadline <= clock.now
