"""The beacon fairness mode in the dealer: a drawing action accepted, its drand round awaited, then resolved.

In a beacon-mode game (its commitment receipt names a drand chain) an action that draws rolls is not
decided when it arrives. Under the game's lock the dealer only checks that the rules accept it (a dry run
that stops at the first roll), fixes the client seeds if it is the start, and records the **acceptance**:
the action, the time, the round its rolls will use (the first one published after that time), the seats'
balances the rules will decide it on, and the signed `roll_acceptance` document the player is given. That
is committed before the round exists, so nobody, the operator included, can know the rolls yet.

While the roll waits, nothing else is accepted in the game (409 `roll_pending`), and no money may leave the
seated wallets by any other way (the database refuses it, service/pokna/sql/ledger_refuse_held_debit.sql): a
player who holds the server seed could otherwise watch the round arrive, compute the roll and void it by
emptying a wallet. When the round arrives (verified against the chain's key by pokna.drand), the action is
resolved: the same rules step, on the balances it was accepted with, each roll
HMAC(server_seed, f"{client_seed}:{randomness}:{nonce}:0") (pokna_verify.fairness.beacon.beacon_roll).

The waiting is the shell's (pokna.dealer.action.game_action waits for the round after the acceptance committed;
`pokna sweep` resolves what nobody waited for); this module decides, on the game as locked, and reads no
network, and no clock: an acceptance is stamped with the moment under the lock it is given (see `accept`).
"""

from __future__ import annotations

import calendar
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta

from pokna.dealer.action.locked import Env, LockedGame
from pokna.dealer.action.rules_step import fix_client_seeds, number_events
from pokna.dealer.announcements import announce_turn
from pokna.dealer.errors import ActionRefused
from pokna.dealer.records import GameRecord, SeatRecord
from pokna.dealer.schemas import GameOut
from pokna.dealer.view import game_out
from pokna.dealer.writes import GameWrites
from pokna.errors import Conflict
from pokna_verify.fairness.beacon import BeaconChain, format_timestamp_ms
from pokna_verify.fairness.beacon_acceptance import build_roll_acceptance
from pokna_verify.fairness.json_reader import JsonReader
from pokna_verify.game import Action, GameError, GameState, Phase, action_from_dict, action_to_dict, step
from pokna_verify.invariant import present

ROLL_ACCEPTED_EVENT = "roll_accepted"
SWEEP_AFTER_DUE = timedelta(seconds=5)
"""The accepted game's deadline is its round's due time plus this: past it (and past the request's own wait,
one period plus POKNA_BEACON_WAIT_MARGIN_SECONDS at most), `pokna sweep` resolves a roll nobody waited for."""


class RollPending(Conflict):
    """The game has an accepted roll waiting for its drand round: nothing else is accepted until it resolves
    (decided as pokna.dealer.action.decision.PendingBeaconRound)."""

    code = "roll_pending"
    title = "A roll is waiting for its beacon round"
    tenant_id: str | None = None  # the shell's, to resolve the roll if its round is due


def chain_of(game: GameRecord) -> BeaconChain | None:
    """The drand chain a beacon-mode game committed to in its receipt; None in the default mode."""
    chain = game.receipt.get("beacon_chain")
    return None if chain is None else BeaconChain.read(JsonReader(chain))


def pending_round(game: GameRecord) -> int | None:
    return None if game.pending_roll is None else int(game.pending_roll["beacon_round"])


def roll_pending(locked: LockedGame) -> RollPending:
    """The refusal of anything asked of a game whose accepted roll waits for its round."""
    game = locked.game
    pending = present(game.pending_roll, "a roll waiting for its round")
    return RollPending(
        f"the game's accepted {pending['action']['action']} waits for drand round "
        f"{pending['beacon_round']} (due {pending['acceptance']['round_due_at']}); "
        "nothing else is accepted until it resolves",
        beacon_round=pending["beacon_round"],
        game=locked.shown(),
    )


class _Draws(Exception):
    """The dry run reached a roll."""


def _stop_at_roll(nonce: int) -> int:
    raise _Draws


def draws_rolls(locked: LockedGame, state: GameState, action: Action) -> bool:
    """Whether the rules accept `action` and it rolls. A refusal raises as the step itself would: every
    refusal is decided before the first roll (the rules check the action, then play it)."""
    try:
        step(state, action, balances=_by_seat(locked.seats, locked.balances), roll_face=_stop_at_roll)
    except _Draws:
        return True
    except GameError as error:
        raise ActionRefused(error, locked.shown()) from error
    return False


def accept(
    locked: LockedGame, writes: GameWrites, chain: BeaconChain, state: GameState, action: Action, env: Env
) -> tuple[LockedGame, GameOut]:
    """Record the drawing `action` as accepted now, waiting for its round: the game after the acceptance,
    and as shown then.

    "Now" is `env.now`, read under the game's lock, never taken from the request's clock (which was read when the
    request arrived, or back-dated for a retried key's deadlines, or is a sweep's start): the named round must
    be the first after the acceptance as it is committed. beacon_roll_write('accept') refuses (as a moved
    wallet, so the request is decided again) if the round would be due before the acceptance commits, and
    checks the seats' balances under their row locks against the ones recorded here."""
    game, seats, balances, keys = locked.game, locked.seats, locked.balances, locked.keys
    moment = env.now
    accepted_at = format_timestamp_ms(_epoch_ms(moment))
    acceptance = build_roll_acceptance(
        game_id=game.id,
        action=action_to_dict(action),
        accepted_at=accepted_at,
        chain=chain,
        private_key=keys.signing_key,
    )
    # The start fixes the client seeds now, before the round is known: a seed the server chose later could
    # be chosen knowing the round.
    seeded: list[SeatRecord] = []
    if state.phase is Phase.OPEN:
        game, seats, seeded = fix_client_seeds(game, seats, env)
    previous_version = game.version
    game, events = number_events(
        replace(game, version=game.version + 1),
        moment,
        [
            (
                ROLL_ACCEPTED_EVENT,
                {
                    "action": action_to_dict(action),
                    "accepted_at": accepted_at,
                    "beacon_round": acceptance["beacon_round"],
                    "round_due_at": acceptance["round_due_at"],
                },
            )
        ],
    )
    by_seat = _by_seat(seats, balances)
    pending_roll = {
        "action": action_to_dict(action),
        "accepted_at": accepted_at,
        "beacon_round": acceptance["beacon_round"],
        "balances": {str(seat): amount for seat, amount in by_seat.items()},
        "acceptance": acceptance,
        # The accepting request's Idempotency-Key (never shown: pokna.dealer.view shows the acceptance):
        # the resolution's answer is stored under it, whoever resolves the roll.
        "answer_key": writes.answer_key,
    }
    due = datetime.fromisoformat(acceptance["round_due_at"].replace("Z", "+00:00"))
    game = replace(game, pending_roll=pending_roll, turn_deadline_at=due + SWEEP_AFTER_DUE)
    writes.accepted_round = int(acceptance["beacon_round"])
    writes.save_step(game, previous_version=previous_version, events=events, rolls=[], seeded=seeded)
    writes.beacon_phase(
        game.id,
        "accept",
        {
            "pending_roll": pending_roll,
            "account_ids": [seat.account_id for seat in seats],
            "balances": {seat.account_id: balances.get(seat.account_id, 0) for seat in seats},
            "round_due_at": acceptance["round_due_at"],
        },
    )
    # The version moved: the turn is announced again with it (nothing is allowed until the roll resolves).
    shown = game_out(game, seats, balances)
    announce_turn(writes, game, shown, moment)
    return replace(locked, game=game, seats=seats), shown


def pending_action(game: GameRecord) -> tuple[Action, str, Mapping[int, int]]:
    """The accepted action, its acceptance time and the balances (by seat) it is decided on."""
    pending = present(game.pending_roll, "a roll waiting for its round")
    balances = {int(seat): int(amount) for seat, amount in pending["balances"].items()}
    return action_from_dict(pending["action"]), str(pending["accepted_at"]), balances


def release(locked: LockedGame, writes: GameWrites) -> LockedGame:
    """The waiting roll resolves: the wallets' hold goes before the resolution posts (same transaction),
    and the resolution's answer is stored under the key of the request that accepted it. The game with no
    roll waiting."""
    game, seats = locked.game, locked.seats
    pending = present(game.pending_roll, "a roll waiting for its round")
    writes.beacon_phase(game.id, "release", {"account_ids": [seat.account_id for seat in seats]})
    writes.answer_key = pending.get("answer_key")
    return replace(locked, game=replace(game, pending_roll=None))


def _by_seat(seats: Sequence[SeatRecord], balances: Mapping[str, int]) -> dict[int, int]:
    return {seat.seat: balances.get(seat.account_id, 0) for seat in seats}


def _epoch_ms(moment: datetime) -> int:
    return calendar.timegm(moment.utctimetuple()) * 1000 + moment.microsecond // 1000
