"""Deadlines: every waiting turn has one, and an open game has one for its start. They apply lazily
(whoever touches a game first after a deadline makes it happen, read or write) and in bulk
(`pokna sweep` lists the due games and applies each), each at its own deadline, so an abandoned game
catches up in one touch exactly as if someone had been watching it. Applying them is part of a decision
(pokna.dealer.decision); the touch that triggers it is pokna.dealer.game_action's.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from pokna.dealer.beacon_rolls import accept, chain_of, draws_rolls
from pokna.dealer.locked import LockedGame
from pokna.dealer.records import OverdueGames
from pokna.dealer.rules_step import apply_step
from pokna.dealer.store import game_store
from pokna.dealer.writes import GameWrites
from pokna_verify.game import Timeout, state_from_dict, turn
from pokna_verify.game.events import TimedOut


def due_games(session: Session, tenant_id: str, now: datetime, limit: int) -> list[tuple[str, str]]:
    """(tenant id, game id) of up to `limit` of the tenant's games with a deadline passed at `now`, the
    longest overdue first: what `pokna sweep` applies, each with pokna.dealer.game_action.apply_due in a
    transaction of its own."""
    return game_store(session).due_games(session, tenant_id, now, limit)


def overdue_games(session: Session, now: datetime) -> OverdueGames:
    """What `pokna sweep` (or the next request touching each game) has still to apply at `now`, across
    tenants: for `/metrics`, where an operator sees the sweeper stopped or the beacon's relays gone."""
    return game_store(session).overdue_games(session, now)


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
