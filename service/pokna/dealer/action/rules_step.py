"""One rules step, decided: the heart of every action and every timeout.

On the game as locked (pokna.dealer.action.locked.LockedGame): run the pure rules step on the wallets'
balances, turn its money moves into the ledger's posting document (with those balances as expected: if one
moved meanwhile, game_write() refuses and the request is decided again on a fresh read), sign the proof if the
game ended, and gather the new state, the rolls, the events and the announcements in the decision's
`GameWrites`, which one call writes (pokna.dealer.writes). A beacon-mode step rolls with its round
(`BeaconDraw`). Its outcome is a value: `Stepped`, or `NeedsRead` when the step rakes or ends the game and the
lock did not read what that needs. Nothing is changed in place: the records after the step are new values
(`evolve`, `dataclasses.replace`'s cheaper twin).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from pokna import ledger
from pokna.dealer.action.locked import Env, LockedGame, NeedsRead
from pokna.dealer.announcements import announce_step
from pokna.dealer.errors import ActionRefused
from pokna.dealer.proof_signing import sign_proof
from pokna.dealer.records import ACTION_EVENT, MONEY_EVENT, EventRecord, GameRecord, RollRecord, SeatRecord
from pokna.dealer.schemas import GameOut
from pokna.dealer.view import game_out, status_of
from pokna.dealer.writes import GameWrites
from pokna_verify.fairness.beacon import BeaconRound, beacon_roll
from pokna_verify.fairness.proof_replay import balance_cap, recorded_balances
from pokna_verify.fairness.protocol import game_client_seed, generate_client_seed, roll
from pokna_verify.fairness.seed_vault import open_server_seed
from pokna_verify.game import (
    POT,
    REVENUE,
    Action,
    Cancel,
    GameError,
    GameState,
    Party,
    Phase,
    StepResult,
    Timeout,
    action_to_dict,
    state_from_dict,
    state_to_dict,
    step,
)
from pokna_verify.game.events import Rolled
from pokna_verify.game.evolve import evolve
from pokna_verify.game.transfers import party_to_json
from pokna_verify.invariant import present
from pokna_verify.ledger.chain import chain_for


@dataclass(frozen=True, slots=True)
class BeaconDraw:
    """What a beacon-mode resolution rolls with: the round, when the action was accepted, and the seats'
    balances then (pokna.dealer.beacon_rolls)."""

    beacon_round: BeaconRound
    accepted_at: str
    balances: Mapping[int, int]


@dataclass(frozen=True, slots=True)
class Stepped:
    """One rules step decided: the game after it, what the rules returned, and the game as a client sees it
    after the step (built once: the step's announcement carries it, and a request's answer is made from its
    last step's)."""

    locked: LockedGame
    result: StepResult
    shown: GameOut


def apply_step(
    locked: LockedGame,
    writes: GameWrites,
    action: Action,
    moment: datetime,
    env: Env,
    *,
    beacon: BeaconDraw | None = None,
    state: GameState | None = None,
) -> Stepped | NeedsRead:
    """One rules step, gathered in `writes`: postings, events, rolls, the game row, its announcements.
    The locked balances (by account) were read without the ledger's lock; the game after the step has them
    with what this step posts. With `beacon` the step resolves a beacon-mode action accepted earlier: its rolls
    use the round, and the rules decide on the balances it was accepted with (pokna.dealer.beacon_rolls).
    `state` is the game's state if the caller has read it already."""
    game, seats, balances, keys = locked.game, locked.seats, locked.balances, locked.keys
    state = state_from_dict(game.state) if state is None else state
    previous_version = game.version
    starting = state.phase is Phase.OPEN and not isinstance(action, Cancel | Timeout)
    client_seeds = _fixed_client_seeds(seats, env) if starting else [seat.client_seed for seat in seats]
    seeds: list[str] = []  # the server seed and the game's client seed, opened at the first roll

    def roll_face(nonce: int) -> int:
        if not seeds:
            seeds.append(open_server_seed(locked.game.sealed_server_seed, keys.seed_key, locked.game.id))
            seeds.append(
                locked.game.game_client_seed or game_client_seed([seed or "" for seed in client_seeds])
            )
        if beacon is not None:
            return beacon_roll(seeds[0], seeds[1], nonce, beacon.beacon_round.randomness).face
        return roll(seeds[0], seeds[1], nonce).face

    def apply_rules(held: Mapping[str, int]) -> tuple[dict[int, int], StepResult]:
        by_seat = (
            dict(beacon.balances)
            if beacon is not None
            else {seat.seat: held[seat.account_id] for seat in seats}
        )
        try:
            return by_seat, step(state, action, balances=by_seat, roll_face=roll_face)
        except GameError as error:
            raise ActionRefused(error, locked.shown()) from error

    # The rules run on balances read without the ledger's lock. A step that moves money posts with those
    # balances as expected: if one moved meanwhile, game_write() writes nothing and raises, and the caller
    # decides the request again on a fresh read.
    seat_balances, result = apply_rules(balances)
    if locked.revenue_account is None and any(t.payee is REVENUE for t in result.transfers):
        return NeedsRead("revenue_account")
    if locked.recorded is None and result.state.is_over:
        return NeedsRead("recorded")
    money, batch, balances = _post_transfers(locked, result, env)
    config = state.config
    cap = balance_cap(config.stake, config.challenge_raise, config.player_count)
    entries: list[tuple[str, dict[str, Any]]] = [
        (ACTION_EVENT, {**action_to_dict(action), "balances": recorded_balances(seat_balances, cap)})
    ]
    rolls: list[RollRecord] = []
    for event in result.events:
        entries.append((event.kind.value, event.to_dict()))
        if isinstance(event, Rolled):
            rolls.append(
                RollRecord(
                    nonce=event.nonce,
                    seat=event.seat,
                    purpose=event.purpose.value,
                    face=event.face,
                    color=event.color.value,
                    rolled_at=moment,
                    accepted_at=None if beacon is None else beacon.accepted_at,
                    beacon=None if beacon is None else beacon.beacon_round.to_json(),
                )
            )
    entries += money
    seeded: list[SeatRecord] = []
    if starting:
        game, seats, seeded = _seat_client_seeds(game, seats, client_seeds)
    game, events = number_events(game, moment, entries)
    game, seats, fixed = _advance(game, seats, locked, state, result.state, moment, env)
    seeded += fixed
    if result.state.is_over:
        writes.finished.append(result.state.outcome.reason.value if result.state.outcome else "cancelled")
        recorded = present(locked.recorded, "the recorded events of a game that may end")
        recorded_events, recorded_rolls = writes.recorded_for_proof(game.id, recorded)
        proof = sign_proof(
            game,
            result.state,
            keys.signing_key,
            seats=seats,
            events=[*recorded_events, *events],
            rolls=[*recorded_rolls, *rolls],
        )
        game = evolve(game, proof=proof)
    writes.save_step(
        game, previous_version=previous_version, events=events, rolls=rolls, seeded=seeded, batch=batch
    )
    if beacon is not None and rolls:
        writes.beacon_phase(
            game.id,
            "rolls",
            {"rolls": [{"nonce": r.nonce, "accepted_at": r.accepted_at, "beacon": r.beacon} for r in rolls]},
        )
    shown = game_out(game, seats, balances, result.state)  # the state `game.state` was written from
    announce_step(writes, game, seats, shown, state, result.state, action, moment)
    return Stepped(evolve(locked, game=game, seats=seats, balances=balances), result, shown)


Seeded = tuple[GameRecord, tuple[SeatRecord, ...], list[SeatRecord]]
"""The game and its seats once the client seeds are fixed, and the seats given one by the server (for
save_step to write)."""


def fix_client_seeds(game: GameRecord, seats: Sequence[SeatRecord], env: Env) -> Seeded:
    """Fix the seeds now (a beacon-mode start, at its acceptance)."""
    return _seat_client_seeds(game, seats, _fixed_client_seeds(seats, env))


def _fixed_client_seeds(seats: Sequence[SeatRecord], env: Env) -> list[str | None]:
    """At the start the seeds are fixed: a seat that never chose one gets a random one from the server."""
    return [seat.client_seed or generate_client_seed(env.random_bytes) for seat in seats]


def _seat_client_seeds(
    game: GameRecord, seats: Sequence[SeatRecord], client_seeds: Sequence[str | None]
) -> Seeded:
    """The seeds fixed at the start, and the game's combined client seed the rolls use."""
    fixed = tuple(
        seat if seat.client_seed is not None else evolve(seat, client_seed=seed, client_seed_source="server")
        for seat, seed in zip(seats, client_seeds, strict=True)
    )
    seeded = [after for before, after in zip(seats, fixed, strict=True) if before.client_seed is None]
    combined = game_client_seed([seat.client_seed or "" for seat in fixed])
    return evolve(game, game_client_seed=combined), fixed, seeded


def _post_transfers(
    locked: LockedGame, result: StepResult, env: Env
) -> tuple[list[tuple[str, dict[str, Any]]], ledger.TransferBatch | None, Mapping[str, int]]:
    """The step's money moves as the ledger's posting document, their money events (each event's
    ledger seq is added when it is posted), and the balances after them."""
    game, seats, balances = locked.game, locked.seats, dict(locked.balances)
    if not result.transfers:
        return [], None, locked.balances
    account_of: dict[Party, str] = {seat.seat: seat.account_id for seat in seats}
    account_of[POT] = game.pot_account_id
    chain = chain_for(game.id)
    if any(transfer.payee is REVENUE for transfer in result.transfers):
        # The revenue sub-account of the chain the transfers go on: rakes of games on different chains
        # lock different revenue accounts.
        account_of[REVENUE] = present(locked.revenue_account, "the revenue account apply_step asked for")

    def account(party: Party) -> str:
        return account_of[party]

    account_transfers = [
        ledger.AccountTransfer(t.kind.value, account(t.payer), account(t.payee), t.amount)
        for t in result.transfers
    ]
    batch = ledger.transfer_batch(
        tenant_id=game.tenant_id,
        currency=game.currency,
        transfers=account_transfers,
        reference=game.id,
        metadata={"game_id": game.id},
        expected_balances={seat.account_id: balances[seat.account_id] for seat in seats},
        chain=chain,
        ids=env.new_id,
        now=env.now,
    )
    for account_transfer in account_transfers:
        for account_id, change in (
            (account_transfer.payer_account_id, -account_transfer.amount),
            (account_transfer.payee_account_id, account_transfer.amount),
        ):
            if account_id in balances:
                balances[account_id] += change
    events: list[tuple[str, dict[str, Any]]] = [
        (
            MONEY_EVENT,
            {
                "kind": transfer.kind.value,
                "payer": party_to_json(transfer.payer),
                "payee": party_to_json(transfer.payee),
                "amount": transfer.amount,
                "journal_transaction_id": transaction_id,
                "ledger_chain": batch.chain,
            },
        )
        for transfer, transaction_id in zip(result.transfers, batch.transaction_ids, strict=True)
    ]
    return events, batch, balances


def _advance(
    game: GameRecord,
    seats: Sequence[SeatRecord],
    locked: LockedGame,
    before: GameState,
    after: GameState,
    moment: datetime,
    env: Env,
) -> Seeded:
    """The game row after a step; a finished game reveals its seed. With the seats, and those whose
    client seeds it fixed (a game cancelled before its start)."""
    seeded: list[SeatRecord] = []
    changes: dict[str, Any] = {
        "state": state_to_dict(after),
        "version": game.version + 1,
        "status": status_of(after),
    }
    if before.phase is Phase.OPEN and after.phase is not Phase.OPEN and not after.is_over:
        changes["started_at"] = moment
    if after.is_over:
        changes["turn_deadline_at"] = None
        changes["ended_at"] = moment
        # Cancelled before the start: the seeds are fixed now, for the proof.
        if game.game_client_seed is None:
            game, seats, seeded = _seat_client_seeds(game, seats, _fixed_client_seeds(seats, env))
        sealed = game.sealed_server_seed
        changes["revealed_server_seed"] = open_server_seed(sealed, locked.keys.seed_key, game.id)
    elif after.phase is Phase.OPEN:
        changes["turn_deadline_at"] = game.created_at + locked.clock.open_game_ttl
    else:
        changes["turn_deadline_at"] = moment + timedelta(seconds=game.turn_timeout_seconds)
    return evolve(game, **changes), tuple(seats), seeded


def number_events(
    game: GameRecord, moment: datetime, entries: list[tuple[str, dict[str, Any]]]
) -> tuple[GameRecord, list[EventRecord]]:
    """Number the entries on from the game's event counter: 1..n per game with no gaps, since the caller
    holds the game's row lock (or is creating the game). The game with its counter moved on (saved with
    the game row), and the events."""
    events = [
        EventRecord(seq=game.event_count + offset, kind=kind, payload=payload, occurred_at=moment)
        for offset, (kind, payload) in enumerate(entries, start=1)
    ]
    return evolve(game, event_count=game.event_count + len(events)), events
