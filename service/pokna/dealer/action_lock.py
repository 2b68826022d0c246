"""The async action's lock statement: the game's lock with its seats and balances (LOCK_GAME_AND_SEATS),
and, when the game's next step may end it, what the proof of the ended game signs (its recorded events
and rolls, RECORDED_FOR_PROOF's columns), in the same statement and round trip.

Without it, the action that ends a game found out only while deciding that it had to sign a proof, and
read the recorded events and rolls in a round trip of its own under the game's lock. Reading them on every
action would cost the database a scan of the game's history each time; so the statement reads them only
when the game's state says one step can end the game (`MAY_END`: rules knowledge, held to the rules by
tests/dealer/test_dealer_action_lock.py, which plays every path of small games through the pure engine).
A step the predicate missed is still right, one round trip dearer: the step asks for the read
(pokna.dealer.writes.NeedsRead) and the caller makes it, as before. That happens on a request that
applies a chain of passed deadlines.

The recorded rows are read under the game's lock, consistent with the seats: a statement's subqueries see
its snapshot, and the seats' check (the version the snapshot saw against the version locked) covers
events and rolls too, as every step bumps the version in the transaction that records them.
"""

from __future__ import annotations

from typing import Any

from pokna.dealer.game_queries import PROOF_EVENTS
from pokna.dealer.store_postgres import LOCK_GAME_AND_SEATS, RECORDED_FOR_PROOF, recorded_records
from pokna.dealer.writes import Recorded


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
        assert bound in columns, bound
        columns = columns.replace(bound, locked)
    assert "%(kinds)s" not in columns
    return f", {MAY_END}, {columns} FROM game WHERE"


_RECORDED_COLUMNS = _recorded_columns()

LOCK_FOR_ACTION = LOCK_GAME_AND_SEATS.replace(" FROM game WHERE", _RECORDED_COLUMNS, 1)
"""LOCK_GAME_AND_SEATS's three columns, then: whether the next step may end the game, and if so its
recorded events (of PROOF_EVENTS' kinds) and rolls."""
assert LOCK_FOR_ACTION.count(MAY_END) == 3
assert LOCK_FOR_ACTION.endswith("FOR NO KEY UPDATE OF game")


def split_locked(row: tuple[Any, ...]) -> tuple[tuple[Any, ...], Recorded | None]:
    """LOCK_FOR_ACTION's row: LOCK_GAME_AND_SEATS's part (for pokna.dealer.store_postgres.locked_records), and
    the recorded events and rolls when they were read."""
    locked, (read, events, rolls) = row[:3], row[3:]
    return locked, recorded_records(events, rolls) if read else None
