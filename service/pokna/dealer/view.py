"""The game as a client sees it: enough to render the table without knowing the rules. Built once, as
the documented answer (pokna.dealer.schemas), from the records the store returned."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pokna.dealer.records import EventRecord, GameRecord, RoundRecord, SeatRecord, TableRecord
from pokna.dealer.schemas import (
    FairnessOut,
    GameEventOut,
    GameOut,
    GameProofOut,
    OutcomeOut,
    PayoutOut,
    PendingRollOut,
    ProofPendingOut,
    RakeOut,
    SeatOut,
    SignedProofOut,
    TableOut,
    TableRoundOut,
    TableTotalOut,
    TurnOut,
)
from pokna_verify.fairness.links import link_path, verify_page_path
from pokna_verify.fairness.proof_replay import outcome_to_json
from pokna_verify.fairness.protocol import PROTOCOL
from pokna_verify.game import VIGO_SEAT, GameState, Phase, SeatStatus, allowed_actions, state_from_dict, turn


def status_of(state: GameState) -> str:
    if state.phase is Phase.OPEN:
        return "open"
    if state.phase is Phase.SETTLED:
        return "settled"
    if state.phase is Phase.CANCELLED:
        return "cancelled"
    return "in_progress"


def seat_status(state: GameState, seat: int) -> str:
    """`in_favor` only for a player who rolled in favor in this pass (or passed every pass so far once the
    rolling is over): before the start and while it still has to roll this pass, a player is `to_roll`."""
    status = state.statuses[seat]
    if status is not SeatStatus.IN_FAVOR:
        return status.value
    if state.phase is Phase.OPEN or (state.phase is Phase.SEEKING and seat in state.to_roll):
        return "to_roll"
    return status.value


def game_out(
    game: GameRecord, seats: Sequence[SeatRecord], balances: Mapping[str, int], state: GameState | None = None
) -> GameOut:
    """`balances` (by account id) are the seats' wallets now: what the turn offers depends on them.
    `state` is the game's state when the caller holds it already (the step that made it): the state
    `game.state` reads back as (tests/game/test_game_properties.py holds the round trip), not read again."""
    state = state_from_dict(game.state) if state is None else state
    account_of = {seat.seat: seat.account_id for seat in seats}
    now = turn(state)
    allowed = list(allowed_actions(state, {seat.seat: balances.get(seat.account_id, 0) for seat in seats}))
    if state.phase is Phase.OPEN:
        allowed.insert(0, "set_client_seed")  # not a rules step: the dealer records it
    if game.pending_roll is not None:  # nothing is accepted until the waiting roll resolves
        allowed = []
    outcome = None
    if state.is_over:
        settled = outcome_to_json(state.outcome)
        outcome = OutcomeOut(
            reason=settled["reason"],
            payouts=[
                PayoutOut(seat=payout["seat"], account_id=account_of[payout["seat"]], amount=payout["amount"])
                for payout in settled["payouts"]
            ],
        )
    return GameOut(
        id=game.id,
        object="game",
        status=game.status,
        phase=state.phase.value,
        table_id=game.table_id,
        round_number=game.round_number,
        currency=game.currency,
        stake=game.stake,
        challenge_raise=game.challenge_raise,
        rake=RakeOut(bps=state.config.rake_bps, cap=state.config.rake_cap),
        rake_taken=state.rake,
        turn_timeout_seconds=game.turn_timeout_seconds,
        pot=state.pot,
        pot_account_id=game.pot_account_id,
        favor=state.favor.value if state.favor else None,
        pass_number=state.pass_number,
        seats=[
            SeatOut(
                seat=seat.seat,
                account_id=seat.account_id,
                role="vigo" if seat.seat == VIGO_SEAT else "player",
                status=seat_status(state, seat.seat),
                voted=state.voted(seat.seat),
                paid_in=state.paid_in[seat.seat],
                paid_out=state.paid_out[seat.seat],
                client_seed=seat.client_seed,
                client_seed_source=seat.client_seed_source,
            )
            for seat in seats
        ],
        turn=None
        if state.is_over
        else TurnOut(
            seats=list(now.seats),
            account_ids=[account_of[seat] for seat in now.seats],
            allowed_actions=allowed,
            default_action=now.default_action,
            deadline_at=game.turn_deadline_at,
        ),
        outcome=outcome,
        fairness=FairnessOut(
            protocol=game.receipt.get("protocol", PROTOCOL),
            mode=game.receipt.get("fairness_mode", "stake"),
            pending_roll=None if game.pending_roll is None else _pending_roll_out(game.pending_roll),
            server_seed_hash=game.server_seed_hash,
            client_seed=game.game_client_seed,
            server_seed=game.revealed_server_seed,
            next_nonce=state.next_nonce,
            commitment=game.receipt,
            public_url=None if game.public_token is None else link_path(game.public_token),
            verify_url=None if game.public_token is None else verify_page_path(game.public_token),
        ),
        version=game.version,
        created_at=game.created_at,
        started_at=game.started_at,
        ended_at=game.ended_at,
    )


def event_out(event: EventRecord) -> GameEventOut:
    answer: GameEventOut = GameEventOut.model_validate(
        {"seq": event.seq, "kind": event.kind, "data": event.payload, "occurred_at": event.occurred_at}
    )
    return answer


def proof_out(game: GameRecord) -> GameProofOut:
    if game.proof is not None:
        return SignedProofOut.model_validate(game.proof)
    return ProofPendingOut(game_id=game.id, status=game.status, revealed=False, commitment=game.receipt)


def _pending_roll_out(pending: Mapping[str, Any]) -> PendingRollOut:
    acceptance = pending["acceptance"]
    return PendingRollOut(
        accepted_at=acceptance["accepted_at"],
        beacon_round=acceptance["beacon_round"],
        round_due_at=acceptance["round_due_at"],
        acceptance=acceptance,
    )


def table_out(table: TableRecord, rounds: Sequence[RoundRecord]) -> TableOut:
    """The table with its rounds so far and each seat's running total (paid out minus paid in)."""
    totals = dict.fromkeys(table.account_ids, 0)
    rounds_out = []
    for round_ in rounds:
        state = state_from_dict(round_.state)
        for seat, account_id in round_.seats:
            totals[account_id] += state.paid_out[seat] - state.paid_in[seat]
        rounds_out.append(
            TableRoundOut(
                round_number=round_.round_number,
                game_id=round_.game_id,
                status=round_.status,
                vigo_account_id=round_.seats[0][1],
                outcome=state.outcome.reason.value if state.outcome else None,
            )
        )
    return TableOut(
        id=table.id,
        object="table",
        account_ids=table.account_ids,
        stake=table.stake,
        challenge_raise=table.challenge_raise,
        rake=RakeOut(bps=table.rake_bps, cap=table.rake_cap),
        currency=table.currency,
        turn_timeout_seconds=table.turn_timeout_seconds,
        rounds_played=table.rounds_played,
        rounds=rounds_out,
        totals=[TableTotalOut(account_id=account, net=net) for account, net in totals.items()],
        created_at=table.created_at,
    )
