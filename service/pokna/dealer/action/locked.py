"""The game as locked (`LockedGame`): the one value every decision is made on
(pokna.dealer.action.decision), with what it takes from the world beside it (`Env`). It is read by one
statement, `LOCK_FOR_ACTION`, which pokna.dealer.action.action_transaction sends pipelined behind BEGIN.

That statement is the game's lock with its seats and balances (LOCK_GAME_AND_SEATS), and, when the game's
next step may end it, what the proof of the ended game signs (its recorded events and rolls,
RECORDED_FOR_PROOF's columns), in the same statement and round trip. Reading them on every action would
cost the database a scan of the game's history each time; so the statement reads them only when the
game's state says one step can end the game (`MAY_END`: rules knowledge, held to the rules by
tests/dealer/test_dealer_action_lock.py, which plays every path of small games through the pure engine).
A step the predicate missed is still right, one round trip dearer: the decision asks for the read
(`NeedsRead`) and the transaction makes it, then decides again. That happens on a request that applies a
chain of passed deadlines. The same goes for the tenant's revenue account of the game's chain, read (and
opened, the first time) when a step rakes.

The recorded rows are read under the game's lock, consistent with the seats: a statement's subqueries see
its snapshot, and the seats' check (the version the snapshot saw against the version locked) covers
events and rolls too, as every step bumps the version in the transaction that records them.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, Literal

from pokna.db.types import new_id, utc_now
from pokna.dealer.records import PROOF_EVENTS, EventRecord, GameRecord, RollRecord, SeatRecord
from pokna.dealer.schemas import GameOut
from pokna.dealer.store_postgres import (
    LOCK_GAME_AND_SEATS,
    RECORDED_FOR_PROOF,
    locked_records,
    recorded_records,
)
from pokna.dealer.view import game_out
from pokna.service_keys import ServiceKeys
from pokna_verify.invariant import holds


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

    def restarted(self, now: datetime) -> Clock:
        """The clock of a decision made later in the same request (a beacon roll resolved after its wait):
        timed from `now`, no longer a retry's."""
        return replace(self, now=now, interrupted_at=None)


Recorded = tuple[list[EventRecord], list[RollRecord]]
"""A game's recorded events (of PROOF_EVENTS' kinds) and rolls, in order: what its proof signs."""


@dataclass(frozen=True)
class Env:
    """What a decision takes from the world, passed in so that `decide` reads no clock and draws nothing
    itself: `now`, the moment under the game's lock (a beacon acceptance's time, the ledger transactions'
    created_at; the request's own moments are the `Clock`'s); `new_id`, the ids of journal transactions,
    postings and outbox messages (pokna.db.types.new_id's shape); `random_bytes`, the randomness of the
    client seeds the server fixes. `live_env` is the service's; a test passes fixed ones."""

    now: datetime
    new_id: Callable[[str], str]
    random_bytes: Callable[[int], bytes]


def live_env() -> Env:
    """The wall clock, read now (under the lock), uuid4 ids and the system's randomness."""
    return Env(utc_now(), new_id, secrets.token_bytes)


@dataclass(frozen=True)
class NeedsRead:
    """The decision needs a read the lock did not make (`what`: "recorded" or "revenue_account"). Nothing
    was written and the rules are pure: the transaction makes the read and decides again."""

    what: Literal["recorded", "revenue_account"]


@dataclass(frozen=True)
class LockedGame:
    """The game under its row lock, its seats in order, their wallets' balances by account (read without
    the ledger's lock: the ledger checks them again as expected balances when money moves), and what the
    decision needs beside them. A rules step returns a new one, the game as it left it."""

    game: GameRecord
    seats: Sequence[SeatRecord]
    balances: Mapping[str, int]
    keys: ServiceKeys
    clock: Clock
    recorded: Recorded | None = None
    revenue_account: str | None = None
    """The tenant's revenue sub-account of the game's currency and chain, once read (a rake's payee)."""

    def shown(self) -> GameOut:
        """The game as a client sees it now (pokna.dealer.view.game_out)."""
        return game_out(self.game, self.seats, self.balances)


def may_end(state: str) -> str:
    """The SQL condition, over a game's `state` (json) expression, that the game's next step may end it: a
    cancel (or the open-game deadline) before the start, a vote, the lone survivor's claim or challenge, a
    challenge's roll, and the last roll of a pass (every survivor may have been eliminated)."""
    phase = f"({state} ->> 'phase')"
    return (
        f"({phase} IN ('open', 'voting', 'lone_survivor', 'challenge_roll') "
        f"OR ({phase} = 'seeking' AND json_array_length({state} -> 'to_roll') <= 1))"
    )


MAY_END = may_end("game.state")


def _recorded_columns() -> str:
    """RECORDED_FOR_PROOF's two columns, for the locked game, read only when MAY_END holds: one definition
    of what a proof reads, whichever statement reads it."""
    columns = RECORDED_FOR_PROOF.removeprefix("SELECT ")
    for bound, locked in (
        ("AND game_id = %(game_id)s", f"AND game_id = %(game_id)s AND {MAY_END}"),
        ("%(kinds)s", "ARRAY[" + ", ".join(repr(kind) for kind in PROOF_EVENTS) + "]"),
    ):
        holds(bound in columns, f"{bound} in the lock's columns")
        columns = columns.replace(bound, locked)
    holds("%(kinds)s" not in columns, "every parameter bound")
    return f", {MAY_END}, {columns} FROM game WHERE"


_RECORDED_COLUMNS = _recorded_columns()

LOCK_FOR_ACTION = LOCK_GAME_AND_SEATS.replace(" FROM game WHERE", _RECORDED_COLUMNS, 1)
"""LOCK_GAME_AND_SEATS's three columns, then: whether the next step may end the game, and if so its
recorded events (of PROOF_EVENTS' kinds) and rolls."""
holds(LOCK_FOR_ACTION.count(MAY_END) == 3, "MAY_END three times in the lock")
holds(LOCK_FOR_ACTION.endswith("FOR NO KEY UPDATE OF game"), "the lock to end in its FOR NO KEY UPDATE")


def split_locked(row: tuple[Any, ...]) -> tuple[tuple[Any, ...], Recorded | None]:
    """LOCK_FOR_ACTION's row: LOCK_GAME_AND_SEATS's part (for pokna.dealer.store_postgres.locked_records), and
    the recorded events and rolls when they were read."""
    locked, (read, events, rolls) = row[:3], row[3:]
    return locked, recorded_records(events, rolls) if read else None


def locked_game(
    locked: tuple[Any, ...],
    keys: ServiceKeys,
    clock: Clock,
    *,
    balances: dict[str, int] | None = None,
    recorded: Recorded | None = None,
    revenue_account: str | None = None,
) -> LockedGame | None:
    """LOCK_GAME_AND_SEATS's part of the row as the value decided on. `balances`: read under the ledger's
    locks instead (after a lost race). None when the seats changed while the lock was awaited: the caller
    locks again."""
    game, seats, read_balances = locked_records(*locked)
    if seats is None:
        return None
    return LockedGame(
        game,
        seats,
        dict(read_balances if balances is None else balances),
        keys,
        clock,
        recorded,
        revenue_account,
    )
