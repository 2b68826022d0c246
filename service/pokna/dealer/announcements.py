"""What the dealer tells the tenant's webhooks: the one place each game event is recorded in the outbox.

Called under the game's lock, in the transaction of the change (creation, or one rules step), so an event
exists exactly when its change does and a game's events are recorded in the order they happened. What
a client would see is built by `game_out`, the game's documented answer, so the turn an event announces
is the turn the API shows.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from pokna.dealer.records import GameRecord, SeatRecord
from pokna.dealer.schemas import GameOut
from pokna.outbox import Recorder
from pokna.outbox.events import (
    GameCancelled,
    GameCreated,
    GameCreatedData,
    GameEndedData,
    GameSettled,
    GameStarted,
    GameStartedData,
    GameTurn,
    GameTurnData,
    GameTurnTimedOut,
    GameTurnTimedOutData,
    PayoutData,
)
from pokna_verify.game import Action, GameState, Phase, Timeout, turn
from pokna_verify.invariant import holds, present


def announce_created(outbox: Recorder, game: GameRecord, seats: Sequence[SeatRecord], shown: GameOut) -> None:
    """`shown`: the new game as its creation answers it (pokna.dealer.view.game_out), built once."""
    holds(game.turn_deadline_at is not None, "a deadline (an open game waits for its start until then)")
    data = GameCreatedData(
        game_id=game.id,
        version=game.version,
        table_id=game.table_id,
        currency=game.currency,
        stake=game.stake,
        challenge_raise=game.challenge_raise,
        turn_timeout_seconds=game.turn_timeout_seconds,
        account_ids=[seat.account_id for seat in seats],
        start_deadline_at=game.turn_deadline_at,
    )
    outbox.record(game.id, GameCreated(timestamp=game.created_at, data=data))
    announce_turn(outbox, game, shown, game.created_at)


def announce_step(
    outbox: Recorder,
    game: GameRecord,
    seats: Sequence[SeatRecord],
    shown: GameOut,
    before: GameState,
    after: GameState,
    action: Action,
    moment: datetime,
) -> None:
    """The events of one rules step, in the order a watcher would tell them: a timeout, the start, then
    either the ending or the next turn. `shown` is the game after the step (pokna.dealer.view.game_out,
    built once by the step): what the next turn offers depends on the seats' wallets after it."""
    if isinstance(action, Timeout):
        waited = turn(before)
        data = GameTurnTimedOutData(
            game_id=game.id,
            version=game.version,
            seats=list(waited.seats),
            account_ids=[seats[seat].account_id for seat in waited.seats],
            applied_action=waited.default_action or "cancel",
            deadline_at=moment,
        )
        outbox.record(game.id, GameTurnTimedOut(timestamp=moment, data=data))
    if before.phase is Phase.OPEN and after.phase is not Phase.OPEN and not after.is_over:
        started = GameStartedData(game_id=game.id, version=game.version, pot=after.pot, started_at=moment)
        outbox.record(game.id, GameStarted(timestamp=moment, data=started))
    if after.is_over:
        _announce_end(outbox, game, shown, moment)
    else:
        announce_turn(outbox, game, shown, moment)


def announce_turn(outbox: Recorder, game: GameRecord, shown: GameOut, moment: datetime) -> None:
    """Also called alone where the version moves with no rules step (a client seed set, a beacon roll
    accepted): the turn is announced again with that version, or a receiver acting on the last
    `game.turn` it had would send a stale `expected_version` and be refused with a conflict."""
    now = present(shown.turn, "a turn to announce")
    data = GameTurnData(
        game_id=game.id,
        version=game.version,
        phase=shown.phase,
        seats=now.seats,
        account_ids=now.account_ids,
        allowed_actions=now.allowed_actions,
        default_action=now.default_action,
        deadline_at=now.deadline_at,
    )
    outbox.record(game.id, GameTurn(timestamp=moment, data=data))


def _announce_end(outbox: Recorder, game: GameRecord, shown: GameOut, moment: datetime) -> None:
    outcome = present(shown.outcome, "an ended game's outcome")
    data = GameEndedData(
        game_id=game.id,
        version=game.version,
        reason=outcome.reason,
        payouts=[
            PayoutData(seat=payout.seat, account_id=payout.account_id, amount=payout.amount)
            for payout in outcome.payouts
        ],
        public_url=shown.fairness.public_url,
        verify_url=shown.fairness.verify_url,
        ended_at=present(game.ended_at, "an ended game's end"),
    )
    ended: GameSettled | GameCancelled = (
        GameSettled(timestamp=moment, data=data)
        if game.status == "settled"
        else GameCancelled(timestamp=moment, data=data)
    )
    outbox.record(game.id, ended)
