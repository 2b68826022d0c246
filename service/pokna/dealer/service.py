"""Creating and playing games: the one way in for every game write (HTTP, CLI sweep and tests alike).

Every action: lock the game row (reading its seats and their balances in the same statement), apply its
passed deadlines, run one pure rules step on those balances, post its money moves with them as expected
balances (if one moved meanwhile, the step is decided again on the balances the ledger then holds), and
write the new state, the rolls and the events, all in the caller's transaction, which commits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.orm import Session

from pokna import ledger
from pokna.db.types import new_id
from pokna.dealer import repository
from pokna.dealer.errors import ActionRefused, ClientSeedLocked, NotSeated, VersionConflict
from pokna.dealer.proof_signing import sign_proof, signed_terms
from pokna.dealer.records import EventRecord, GameRecord, RollRecord, SeatRecord
from pokna.dealer.view import game_view, status_of
from pokna.errors import InvalidRequest
from pokna.fairness.proof_replay import balance_cap, recorded_balances
from pokna.fairness.protocol import (
    client_seed_problem,
    game_client_seed,
    generate_client_seed,
    generate_server_seed,
    roll,
    server_seed_hash,
)
from pokna.fairness.receipt import build_commitment_receipt
from pokna.fairness.seed_vault import open_server_seed, seal_server_seed
from pokna.game import (
    POT,
    Action,
    Cancel,
    Challenge,
    Claim,
    GameConfig,
    GameError,
    GameState,
    Phase,
    Roll,
    Start,
    StepResult,
    Timeout,
    Vote,
    VoteChoice,
    action_to_dict,
    new_game,
    state_from_dict,
    state_to_dict,
    step,
)
from pokna.game.events import Rolled
from pokna.game.transfers import party_to_json
from pokna.ledger.errors import BalancesChanged
from pokna.ledger.model import AccountKind, AccountTransfer
from pokna.service_keys import ServiceKeys


@dataclass(frozen=True)
class NewGame:
    vigo_account_id: str
    player_account_ids: Sequence[str]
    stake: int
    challenge_raise: int | None = None
    currency: str = "CREDIT"
    turn_timeout_seconds: int = 60


@dataclass(frozen=True)
class PlayerAction:
    """One request to act. `account_id` names the seat; the app acts on behalf of its players."""

    type: str
    account_id: str | None = None
    choice: str | None = None
    client_seed: str | None = None
    expected_version: int | None = None


@dataclass(frozen=True)
class Clock:
    now: datetime
    open_game_ttl: timedelta


# --- creating ------------------------------------------------------------------------------------------


def create_game(
    session: Session,
    keys: ServiceKeys,
    clock: Clock,
    tenant_id: str,
    terms: NewGame,
    *,
    table_id: str | None = None,
    round_number: int | None = None,
) -> dict[str, Any]:
    """The new game as a client sees it (game_view), with its signed commitment."""
    account_ids = [terms.vigo_account_id, *terms.player_account_ids]
    fields = ["body.vigo_account_id"]
    fields += [f"body.player_account_ids.{index}" for index in range(len(terms.player_account_ids))]
    check_seating(session, tenant_id, account_ids, terms.currency, fields)
    try:
        config = GameConfig.create(
            stake=terms.stake,
            challenge_raise=terms.challenge_raise,
            player_count=len(terms.player_account_ids),
        )
    except GameError as error:
        field = str(error.details.get("field", ""))
        raise InvalidRequest(error.message, field=f"body.{field}" if field else "body") from error
    game_id = new_id("game")
    server_seed = generate_server_seed()
    commitment = server_seed_hash(server_seed)
    pot = ledger.open_account(
        session, tenant_id=tenant_id, kind=AccountKind.GAME_POT, currency=terms.currency, external_id=game_id
    )
    game = GameRecord(
        id=game_id,
        tenant_id=tenant_id,
        table_id=table_id,
        round_number=round_number,
        status="open",
        stake=config.stake,
        challenge_raise=config.challenge_raise,
        currency=terms.currency,
        turn_timeout_seconds=terms.turn_timeout_seconds,
        pot_account_id=pot.id,
        state=state_to_dict(new_game(config)),
        version=1,
        event_count=0,
        server_seed_hash=commitment,
        sealed_server_seed=seal_server_seed(server_seed, keys.seed_key, game_id),
        revealed_server_seed=None,
        game_client_seed=None,
        receipt=build_commitment_receipt(
            game_id=game_id,
            server_seed_hash=commitment,
            created_at=_rfc3339(clock.now),
            terms=signed_terms(config.stake, config.challenge_raise, account_ids),
            private_key=keys.signing_key,
        ),
        proof=None,
        turn_deadline_at=clock.now + clock.open_game_ttl,
        created_at=clock.now,
        started_at=None,
        ended_at=None,
    )
    seats = [SeatRecord(seat, account, None, None) for seat, account in enumerate(account_ids)]
    events = _number(game, clock.now, [("game_created", {"server_seed_hash": commitment})])
    repository.insert_game(session, game, seats, events)
    return game_view(game, seats)


def check_seating(
    session: Session, tenant_id: str, account_ids: list[str], currency: str, fields: list[str]
) -> None:
    """Each seat a distinct player wallet of this tenant, in the game's currency; `fields` name them."""
    seen: dict[str, str] = {}
    for field, account_id in zip(fields, account_ids, strict=True):
        if account_id in seen:
            raise InvalidRequest(f"account {account_id} already sits at {seen[account_id]}", field=field)
        seen[account_id] = field
    accounts = repository.wallet_candidates(session, tenant_id, account_ids)
    for field, account_id in zip(fields, account_ids, strict=True):
        account = accounts.get(account_id)
        if account is None:
            raise InvalidRequest(f"no account {account_id}", field=field)
        if account.kind != AccountKind.PLAYER_WALLET:
            raise InvalidRequest(
                f"account {account_id} is a {account.kind}, not a player wallet", field=field
            )
        if account.currency != currency:
            raise InvalidRequest(
                f"account {account_id} holds {account.currency}, the game is played in {currency}",
                field=field,
            )


# --- reading -------------------------------------------------------------------------------------------


def read_game(session: Session, tenant_id: str, game_id: str) -> dict[str, Any]:
    game = repository.get_game(session, tenant_id, game_id)
    return game_view(game, repository.seats_of(session, game.id))


# --- acting --------------------------------------------------------------------------------------------


def act(
    session: Session, keys: ServiceKeys, clock: Clock, tenant_id: str, game_id: str, request: PlayerAction
) -> dict[str, Any]:
    game, seats, balances = repository.lock_game_and_seats(session, tenant_id, game_id)
    _apply_passed_deadlines(session, keys, clock, game, seats, balances)
    if request.expected_version is not None and request.expected_version != game.version:
        raise VersionConflict(
            f"expected version {request.expected_version}, the game is at {game.version}",
            game=game_view(game, seats),
        )
    if request.type == "set_client_seed":
        _set_client_seed(session, game, seats, request, clock.now)
    else:
        action = _to_engine_action(request, seats)
        _apply(session, keys, clock, game, seats, balances, action, clock.now)
    return game_view(game, seats)


def apply_due_timeouts(
    session: Session, keys: ServiceKeys, clock: Clock, tenant_id: str, game_id: str
) -> int:
    """Apply every deadline that has passed, each at its own deadline, so an abandoned game catches up
    in one touch exactly as if someone had been watching it."""
    if not repository.deadline_passed(session, tenant_id, game_id, clock.now):
        return 0  # the common case: no lock taken, nothing written
    game, seats, balances = repository.lock_game_and_seats(session, tenant_id, game_id)
    return _apply_passed_deadlines(session, keys, clock, game, seats, balances)


def _apply_passed_deadlines(
    session: Session,
    keys: ServiceKeys,
    clock: Clock,
    game: GameRecord,
    seats: Sequence[SeatRecord],
    balances: dict[str, int],
) -> int:
    """Under the game's lock: each passed deadline's default action, stamped at that deadline."""
    applied = 0
    while game.turn_deadline_at is not None and game.turn_deadline_at <= clock.now:
        _apply(session, keys, clock, game, seats, balances, Timeout(), game.turn_deadline_at)
        applied += 1
    return applied


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


def _to_engine_action(request: PlayerAction, seats: Sequence[SeatRecord]) -> Action:
    if request.type == "cancel":
        return Cancel()
    seat = _seat_of(seats, request.account_id)
    match request.type:
        case "start":
            return Start(seat)
        case "roll":
            return Roll(seat)
        case "claim":
            return Claim(seat)
        case "challenge":
            return Challenge(seat)
        case "vote":
            try:
                return Vote(seat, VoteChoice(request.choice or ""))
            except ValueError:
                raise InvalidRequest("choice is `split` or `roll_again`", field="body.choice") from None
    raise InvalidRequest(f"unknown action type {request.type!r}", field="body.type")


def _set_client_seed(
    session: Session, game: GameRecord, seats: Sequence[SeatRecord], request: PlayerAction, now: datetime
) -> None:
    if game.status != "open":
        raise ClientSeedLocked(
            "client seeds can be set only before the game starts", game=game_view(game, seats)
        )
    if (problem := client_seed_problem(request.client_seed)) is not None:
        raise InvalidRequest(problem, field="body.client_seed")
    seat = seats[_seat_of(seats, request.account_id)]
    seat.client_seed = request.client_seed
    seat.client_seed_source = "player"
    previous_version = game.version
    game.version += 1
    events = _number(
        game, now, [("client_seed_set", {"seat": seat.seat, "client_seed": request.client_seed})]
    )
    repository.save_step(
        session, game, previous_version=previous_version, events=events, rolls=[], seeded=[seat]
    )


def _apply(
    session: Session,
    keys: ServiceKeys,
    clock: Clock,
    game: GameRecord,
    seats: Sequence[SeatRecord],
    balances: dict[str, int],
    action: Action,
    moment: datetime,
) -> StepResult:
    """One rules step, persisted: postings, events, rolls and the game row. `balances` (by account) were
    read without a lock; they are kept up to date with what this step posts."""
    state = state_from_dict(game.state)
    previous_version = game.version
    starting = state.phase is Phase.OPEN and not isinstance(action, Cancel | Timeout)
    client_seeds = _fixed_client_seeds(seats) if starting else [seat.client_seed for seat in seats]
    seeds: list[str] = []  # the server seed and the game's client seed, opened at the first roll

    def roll_face(nonce: int) -> int:
        if not seeds:
            seeds.append(open_server_seed(game.sealed_server_seed, keys.seed_key, game.id))
            seeds.append(game.game_client_seed or game_client_seed([seed or "" for seed in client_seeds]))
        return roll(seeds[0], seeds[1], nonce).face

    def apply_rules(held: dict[str, int]) -> tuple[dict[int, int], StepResult]:
        by_seat = {seat.seat: held[seat.account_id] for seat in seats}
        try:
            return by_seat, step(state, action, balances=by_seat, roll_face=roll_face)
        except GameError as error:
            raise ActionRefused(error, game_view(game, seats)) from error

    # The rules run on balances read without a lock. A step that moves money posts with those balances
    # as expected: the ledger locks its head and the wallets in one round trip, and if a balance moved
    # meanwhile it posts nothing and answers with the balances it now holds, on which the pure step
    # simply runs again (the locks stay held: nothing can change them a second time).
    seat_balances, result = apply_rules(balances)
    # A finishing step signs the proof over everything recorded so far: read under the game's lock but
    # before the ledger's, so that the ledger's critical section stays short.
    recorded = repository.recorded_for_proof(session, game.id) if result.state.is_over else None
    try:
        money = _post_transfers(session, game, seats, balances, result)
    except BalancesChanged as changed:
        balances.update(changed.balances)
        seat_balances, result = apply_rules(balances)
        if result.state.is_over and recorded is None:
            recorded = repository.recorded_for_proof(session, game.id)
        money = _post_transfers(session, game, seats, balances, result)
    config = state.config
    cap = balance_cap(config.stake, config.challenge_raise, config.player_count)
    entries: list[tuple[str, dict[str, Any]]] = [
        ("action", {**action_to_dict(action), "balances": recorded_balances(seat_balances, cap)})
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
                )
            )
    entries += money
    seeded = _seat_client_seeds(game, seats, client_seeds) if starting else []
    events = _number(game, moment, entries)
    seeded += _advance(keys, clock, game, seats, state, result.state, moment)
    if result.state.is_over:
        assert recorded is not None
        recorded_events, recorded_rolls = recorded
        game.proof = sign_proof(
            game,
            result.state,
            keys.signing_key,
            seats=seats,
            events=[*recorded_events, *events],
            rolls=[*recorded_rolls, *rolls],
        )
    repository.save_step(
        session, game, previous_version=previous_version, events=events, rolls=rolls, seeded=seeded
    )
    return result


def _fixed_client_seeds(seats: Sequence[SeatRecord]) -> list[str | None]:
    """At the start the seeds are fixed: a seat that never chose one gets a random one from the server."""
    return [seat.client_seed or generate_client_seed() for seat in seats]


def _seat_client_seeds(
    game: GameRecord, seats: Sequence[SeatRecord], client_seeds: Sequence[str | None]
) -> list[SeatRecord]:
    """Record the seeds fixed at the start, and the game's combined client seed the rolls use. The
    seats given a seed by the server are returned, for save_step to write."""
    seeded = []
    for seat, seed in zip(seats, client_seeds, strict=True):
        if seat.client_seed is None:
            seat.client_seed = seed
            seat.client_seed_source = "server"
            seeded.append(seat)
    game.game_client_seed = game_client_seed([seat.client_seed or "" for seat in seats])
    return seeded


def _post_transfers(
    session: Session,
    game: GameRecord,
    seats: Sequence[SeatRecord],
    balances: dict[str, int],
    result: StepResult,
) -> list[tuple[str, dict[str, Any]]]:
    if not result.transfers:
        return []
    account_of = {seat.seat: seat.account_id for seat in seats}

    def account(party: int | object) -> str:
        return game.pot_account_id if party is POT else account_of[party]  # type: ignore[index]

    account_transfers = [
        AccountTransfer(t.kind.value, account(t.payer), account(t.payee), t.amount) for t in result.transfers
    ]
    posted = ledger.post_transfers(
        session,
        tenant_id=game.tenant_id,
        transfers=account_transfers,
        reference=game.id,
        metadata={"game_id": game.id},
        expected_balances={seat.account_id: balances[seat.account_id] for seat in seats},
    )
    for account_transfer in account_transfers:
        for account_id, change in (
            (account_transfer.payer_account_id, -account_transfer.amount),
            (account_transfer.payee_account_id, account_transfer.amount),
        ):
            if account_id in balances:
                balances[account_id] += change
    return [
        (
            repository.MONEY_EVENT,
            {
                "kind": transfer.kind.value,
                "payer": party_to_json(transfer.payer),
                "payee": party_to_json(transfer.payee),
                "amount": transfer.amount,
                "journal_transaction_id": journal.id,
                "ledger_seq": journal.seq,
            },
        )
        for transfer, journal in zip(result.transfers, posted, strict=True)
    ]


def _advance(
    keys: ServiceKeys,
    clock: Clock,
    game: GameRecord,
    seats: Sequence[SeatRecord],
    before: GameState,
    after: GameState,
    moment: datetime,
) -> list[SeatRecord]:
    """The game row after a step; a finished game reveals its seed. Returns the seats whose client
    seeds it fixed (a game cancelled before its start)."""
    seeded: list[SeatRecord] = []
    game.state = state_to_dict(after)
    game.version += 1
    game.status = status_of(after)
    if before.phase is Phase.OPEN and after.phase is not Phase.OPEN and not after.is_over:
        game.started_at = moment
    if after.is_over:
        game.turn_deadline_at = None
        game.ended_at = moment
        if (
            game.game_client_seed is None
        ):  # cancelled before the start: the seeds are fixed now, for the proof
            seeded = _seat_client_seeds(game, seats, _fixed_client_seeds(seats))
        game.revealed_server_seed = open_server_seed(game.sealed_server_seed, keys.seed_key, game.id)
    elif after.phase is Phase.OPEN:
        game.turn_deadline_at = game.created_at + clock.open_game_ttl
    else:
        game.turn_deadline_at = moment + timedelta(seconds=game.turn_timeout_seconds)
    return seeded


def _number(
    game: GameRecord, moment: datetime, entries: list[tuple[str, dict[str, Any]]]
) -> list[EventRecord]:
    """Number the entries on from the game's event counter: 1..n per game with no gaps, since the caller
    holds the game's row lock (or is creating the game). The counter is saved with the game row."""
    events = [
        EventRecord(seq=game.event_count + offset, kind=kind, payload=payload, occurred_at=moment)
        for offset, (kind, payload) in enumerate(entries, start=1)
    ]
    game.event_count += len(events)
    return events


def _rfc3339(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")
