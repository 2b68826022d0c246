"""Creating and playing games: the one way in for every game write (HTTP, CLI sweep and tests alike).

Every action: lock the game row, apply its passed deadlines, run one pure rules step (on balances read
without a lock; a step that moves money then takes the tenant's ledger head and the seats' wallets and is
re-run on the balances held), and persist the new state, the rolls, the events and the postings in the
caller's transaction. Services flush; the caller's unit of work commits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.orm import Session

from pokna.db.models.game import Game, GameEvent, GameRoll, GameSeat
from pokna.db.types import new_id
from pokna.errors import InvalidRequest
from pokna.fairness.protocol import (
    client_seed_problem,
    game_client_seed,
    generate_client_seed,
    generate_server_seed,
    roll,
    server_seed_hash,
)
from pokna.fairness.receipt import build_commitment_receipt
from pokna.fairness.replay import balance_cap, recorded_balances
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
from pokna.games import repository
from pokna.games.errors import ActionRefused, ClientSeedLocked, NotSeated, VersionConflict
from pokna.games.proof import sign_proof, signed_terms
from pokna.games.view import game_view, status_of
from pokna.ledger import service as ledger
from pokna.ledger.errors import AccountNotFound
from pokna.ledger.holds import lock_balances, read_balances
from pokna.ledger.model import AccountKind, Move
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
) -> Game:
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
    game = Game(
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
        receipt=build_commitment_receipt(
            game_id=game_id,
            server_seed_hash=commitment,
            created_at=_rfc3339(clock.now),
            terms=signed_terms(config.stake, config.challenge_raise, account_ids),
            private_key=keys.signing_key,
        ),
        turn_deadline_at=clock.now + clock.open_game_ttl,
        created_at=clock.now,
    )
    session.add(game)
    session.flush()
    session.add_all(
        GameSeat(game_id=game_id, seat=seat, account_id=account) for seat, account in enumerate(account_ids)
    )
    _record(session, game, clock.now, [("game_created", {"server_seed_hash": commitment})])
    session.flush()
    return game


def check_seating(
    session: Session, tenant_id: str, account_ids: list[str], currency: str, fields: list[str]
) -> None:
    """Each seat a distinct player wallet of this tenant, in the game's currency; `fields` name them."""
    seen: dict[str, str] = {}
    for field, account_id in zip(fields, account_ids, strict=True):
        if account_id in seen:
            raise InvalidRequest(f"account {account_id} already sits at {seen[account_id]}", field=field)
        seen[account_id] = field
        try:
            account = ledger.get_account(session, account_id, tenant_id=tenant_id)
        except AccountNotFound as error:
            raise InvalidRequest(f"no account {account_id}", field=field) from error
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
    game = repository.get_game(session, tenant_id, game_id, for_update=True)
    seats = repository.seats_of(session, game.id)
    _apply_passed_deadlines(session, keys, clock, game, seats)
    if request.expected_version is not None and request.expected_version != game.version:
        raise VersionConflict(
            f"expected version {request.expected_version}, the game is at {game.version}",
            game=game_view(game, seats),
        )
    if request.type == "set_client_seed":
        _set_client_seed(session, game, seats, request, clock.now)
    else:
        action = _to_engine_action(request, seats)
        _apply(session, keys, clock, game, seats, action, clock.now)
    return game_view(game, seats)


def apply_due_timeouts(
    session: Session, keys: ServiceKeys, clock: Clock, tenant_id: str, game_id: str
) -> int:
    """Apply every deadline that has passed, each at its own deadline, so an abandoned game catches up
    in one touch exactly as if someone had been watching it."""
    if not repository.deadline_passed(session, tenant_id, game_id, clock.now):
        return 0  # the common case: no lock taken, nothing written
    game = repository.get_game(session, tenant_id, game_id, for_update=True)
    return _apply_passed_deadlines(session, keys, clock, game, repository.seats_of(session, game.id))


def _apply_passed_deadlines(
    session: Session, keys: ServiceKeys, clock: Clock, game: Game, seats: Sequence[GameSeat]
) -> int:
    """Under the game's lock: each passed deadline's default action, stamped at that deadline."""
    applied = 0
    while game.turn_deadline_at is not None and game.turn_deadline_at <= clock.now:
        _apply(session, keys, clock, game, seats, Timeout(), game.turn_deadline_at)
        applied += 1
    return applied


def _seat_of(seats: Sequence[GameSeat], account_id: str | None) -> int:
    for seat in seats:
        if seat.account_id == account_id:
            return seat.seat
    raise NotSeated(
        f"account {account_id} has no seat in this game",
        invalid_params=[
            {"name": "body.account_id", "reason": "not seated in this game", "pointer": "/account_id"}
        ],
    )


def _to_engine_action(request: PlayerAction, seats: Sequence[GameSeat]) -> Action:
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
    session: Session, game: Game, seats: Sequence[GameSeat], request: PlayerAction, now: datetime
) -> None:
    if game.status != "open":
        raise ClientSeedLocked(
            "client seeds can be set only before the game starts", game=game_view(game, seats)
        )
    if (problem := client_seed_problem(request.client_seed)) is not None:
        raise InvalidRequest(problem, field="body.client_seed")
    seat_number = _seat_of(seats, request.account_id)
    seat = seats[seat_number]
    seat.client_seed = request.client_seed
    seat.client_seed_source = "player"
    game.version += 1
    _record(
        session, game, now, [("client_seed_set", {"seat": seat_number, "client_seed": request.client_seed})]
    )
    session.flush()


def _apply(
    session: Session,
    keys: ServiceKeys,
    clock: Clock,
    game: Game,
    seats: Sequence[GameSeat],
    action: Action,
    moment: datetime,
) -> StepResult:
    state = state_from_dict(game.state)
    wallets = [seat.account_id for seat in seats]
    if state.phase is Phase.OPEN and not isinstance(action, Cancel | Timeout):
        _fix_client_seeds(game, seats)
    server_seed: list[str] = []

    def roll_face(nonce: int) -> int:
        if not server_seed:
            server_seed.append(open_server_seed(game.sealed_server_seed, keys.seed_key, game.id))
        assert game.game_client_seed is not None
        return roll(server_seed[0], game.game_client_seed, nonce).face

    def apply_rules(held: dict[str, int]) -> tuple[dict[int, int], StepResult]:
        balances = {seat.seat: held[seat.account_id] for seat in seats}
        try:
            return balances, step(state, action, balances=balances, roll_face=roll_face)
        except GameError as error:
            raise ActionRefused(error, game_view(game, seats)) from error

    # Most actions move no money, so the rules first run on balances read without a lock. Only a step
    # that moves money takes the tenant's ledger lock and the seats' wallets (the ledger's lock order),
    # and if a balance changed meanwhile the pure step simply runs again on the balances now held.
    balances, result = apply_rules(read_balances(session, tenant_id=game.tenant_id, account_ids=wallets))
    if result.transfers:
        held = lock_balances(session, tenant_id=game.tenant_id, account_ids=wallets)
        if {seat.seat: held[seat.account_id] for seat in seats} != balances:
            balances, result = apply_rules(held)
    config = state.config
    cap = balance_cap(config.stake, config.challenge_raise, config.player_count)
    entries: list[tuple[str, dict[str, Any]]] = [
        ("action", {**action_to_dict(action), "balances": recorded_balances(balances, cap)})
    ]
    rolls: list[GameRoll] = []
    for event in result.events:
        entries.append((event.kind.value, event.to_dict()))
        if isinstance(event, Rolled):
            rolls.append(
                GameRoll(
                    game_id=game.id,
                    nonce=event.nonce,
                    seat=event.seat,
                    purpose=event.purpose.value,
                    face=event.face,
                    color=event.color.value,
                    rolled_at=moment,
                )
            )
    entries += _post_transfers(session, game, seats, result)
    session.add_all(rolls)
    _record(session, game, moment, entries)
    _advance(session, keys, clock, game, seats, state, result.state, moment)
    # One flush per action: the rolls, the events and the game's UPDATE (with its event counter) together.
    session.flush()
    return result


def _fix_client_seeds(game: Game, seats: Sequence[GameSeat]) -> None:
    """At the start the seeds are fixed: a seat that never chose one gets a random one from the server."""
    for seat in seats:
        if seat.client_seed is None:
            seat.client_seed = generate_client_seed()
            seat.client_seed_source = "server"
    game.game_client_seed = game_client_seed([seat.client_seed or "" for seat in seats])


def _post_transfers(
    session: Session, game: Game, seats: Sequence[GameSeat], result: StepResult
) -> list[tuple[str, dict[str, Any]]]:
    if not result.transfers:
        return []
    account_of = {seat.seat: seat.account_id for seat in seats}

    def account(party: int | object) -> str:
        return game.pot_account_id if party is POT else account_of[party]  # type: ignore[index]

    moves = [Move(t.kind.value, account(t.payer), account(t.payee), t.amount) for t in result.transfers]
    posted = ledger.post_transfers(
        session, tenant_id=game.tenant_id, moves=moves, reference=game.id, metadata={"game_id": game.id}
    )
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
    session: Session,
    keys: ServiceKeys,
    clock: Clock,
    game: Game,
    seats: Sequence[GameSeat],
    before: GameState,
    after: GameState,
    moment: datetime,
) -> None:
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
            _fix_client_seeds(game, seats)
        game.revealed_server_seed = open_server_seed(game.sealed_server_seed, keys.seed_key, game.id)
        session.flush()  # the proof reads the rolls and events back
        game.proof = sign_proof(session, game, after, keys.signing_key, seats=seats)
    elif after.phase is Phase.OPEN:
        game.turn_deadline_at = game.created_at + clock.open_game_ttl
    else:
        game.turn_deadline_at = moment + timedelta(seconds=game.turn_timeout_seconds)


def _record(
    session: Session, game: Game, moment: datetime, entries: list[tuple[str, dict[str, Any]]]
) -> None:
    """Number the entries on from the game's event counter (1..n per game, no gaps: the caller holds the
    game's row lock) and add them; they are written with the next flush, with the game's UPDATE."""
    seq = game.event_count
    events = []
    for kind, payload in entries:
        seq += 1
        events.append(GameEvent(game_id=game.id, seq=seq, kind=kind, payload=payload, occurred_at=moment))
    game.event_count = seq
    session.add_all(events)


def _rfc3339(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")
