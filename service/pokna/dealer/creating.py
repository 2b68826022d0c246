"""Creating games: the seats checked against the ledger's wallets, the stake against the rules, the server
seed drawn and sealed, and the commitment signed before anyone can choose a client seed or roll."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session

from pokna import ledger
from pokna.db.types import new_id
from pokna.dealer.announcements import announce_created
from pokna.dealer.deadlines import Clock
from pokna.dealer.links import new_public_token
from pokna.dealer.proof_signing import signed_terms
from pokna.dealer.rake import RakeTerms, game_config, rake_terms_for
from pokna.dealer.records import EventRecord, GameRecord, SeatRecord
from pokna.dealer.schemas import GameOut
from pokna.dealer.stepping import number_events
from pokna.dealer.store import game_store
from pokna.dealer.view import game_out
from pokna.errors import InvalidRequest
from pokna.outbox import SessionOutbox
from pokna.service_keys import ServiceKeys
from pokna.tenants.settings import default_fairness_mode
from pokna_verify.fairness.beacon import BeaconChain
from pokna_verify.fairness.protocol import generate_server_seed, server_seed_hash
from pokna_verify.fairness.receipt import build_commitment_receipt
from pokna_verify.fairness.seed_vault import seal_server_seed
from pokna_verify.game import GameConfig, new_game, state_to_dict


@dataclass(frozen=True)
class NewGame:
    vigo_account_id: str
    player_account_ids: Sequence[str]
    stake: int
    challenge_raise: int | None = None
    currency: str = "CREDIT"
    turn_timeout_seconds: int = 60
    rake: RakeTerms | None = None  # None: the tenant's default rake terms
    seat_labels: Sequence[str] | None = None  # the Vigo's first; signed into the commitment and the proof
    fairness_mode: str | None = None  # "stake" or "beacon"; None: the tenant's default


def create_game(
    session: Session,
    keys: ServiceKeys,
    clock: Clock,
    tenant_id: str,
    terms: NewGame,
    *,
    table_id: str | None = None,
    round_number: int | None = None,
    beacon_chain: BeaconChain | None = None,
) -> GameOut:
    """The new game as a client sees it, with its signed commitment. `beacon_chain`: the drand chain this
    service plays beacon-mode games against, committed to in the receipt of such a game."""
    account_ids, fields = seated(terms)
    balances = check_seating(session, tenant_id, account_ids, terms.currency, fields)
    check_labels(terms.seat_labels, len(account_ids))
    rake = rake_terms_for(session, tenant_id, terms.rake)
    config = game_config(terms.stake, terms.challenge_raise, len(terms.player_account_ids), rake)
    chain = chain_for(terms.fairness_mode or default_fairness_mode(session, tenant_id), beacon_chain)
    game_id = new_id("game")
    pot = ledger.open_account(
        session,
        tenant_id=tenant_id,
        kind=ledger.AccountKind.GAME_POT,
        currency=terms.currency,
        external_id=game_id,
    )
    game, seats, events = new_game_records(
        keys,
        clock,
        tenant_id,
        terms,
        config,
        chain,
        game_id,
        pot.id,
        table_id=table_id,
        round_number=round_number,
    )
    game_store(session).insert_game(session, game, seats, events)
    announce_created(SessionOutbox(session), game, seats, balances)
    return game_out(game, seats, balances)


def seated(terms: NewGame) -> tuple[list[str], list[str]]:
    """The seats' accounts, the Vigo's first, and the request fields that name them."""
    fields = ["body.vigo_account_id"]
    fields += [f"body.player_account_ids.{index}" for index in range(len(terms.player_account_ids))]
    return [terms.vigo_account_id, *terms.player_account_ids], fields


def new_game_records(
    keys: ServiceKeys,
    clock: Clock,
    tenant_id: str,
    terms: NewGame,
    config: GameConfig,
    chain: BeaconChain | None,
    game_id: str,
    pot_account_id: str,
    *,
    table_id: str | None = None,
    round_number: int | None = None,
) -> tuple[GameRecord, list[SeatRecord], list[EventRecord]]:
    """The new game's row, seats and first event, its server seed drawn and sealed and its commitment
    signed: pure but for the seed's randomness (the synchronous and the async creation share it)."""
    account_ids = [terms.vigo_account_id, *terms.player_account_ids]
    server_seed = generate_server_seed()
    commitment = server_seed_hash(server_seed)
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
        pot_account_id=pot_account_id,
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
            terms=signed_terms(config, account_ids, terms.seat_labels),
            private_key=keys.signing_key,
            beacon_chain=chain,
        ),
        proof=None,
        public_token=new_public_token(),
        turn_deadline_at=clock.now + clock.open_game_ttl,
        created_at=clock.now,
        started_at=None,
        ended_at=None,
    )
    seats = [SeatRecord(seat, account, None, None) for seat, account in enumerate(account_ids)]
    events = number_events(game, clock.now, [("game_created", {"server_seed_hash": commitment})])
    return game, seats, events


def check_seating(
    session: Session, tenant_id: str, account_ids: list[str], currency: str, fields: list[str]
) -> dict[str, int]:
    """Each seat a distinct player wallet of this tenant, in the game's currency; `fields` name them.
    The wallets' balances, by account id."""
    check_distinct(account_ids, fields)
    return seated_balances(
        ledger.account_summaries(session, tenant_id, account_ids), account_ids, currency, fields
    )


def check_distinct(account_ids: list[str], fields: list[str]) -> None:
    seen: dict[str, str] = {}
    for field, account_id in zip(fields, account_ids, strict=True):
        if account_id in seen:
            raise InvalidRequest(f"account {account_id} already sits at {seen[account_id]}", field=field)
        seen[account_id] = field


def seated_balances(
    accounts: Mapping[str, ledger.AccountSummary], account_ids: list[str], currency: str, fields: list[str]
) -> dict[str, int]:
    """The seats' accounts (read by the caller) checked: each a player wallet of the game's currency."""
    for field, account_id in zip(fields, account_ids, strict=True):
        account = accounts.get(account_id)
        if account is None:
            raise InvalidRequest(f"no account {account_id}", field=field)
        if account.kind != ledger.AccountKind.PLAYER_WALLET:
            raise InvalidRequest(
                f"account {account_id} is a {account.kind}, not a player wallet", field=field
            )
        if account.currency != currency:
            raise InvalidRequest(
                f"account {account_id} holds {account.currency}, the game is played in {currency}",
                field=field,
            )
    return {account_id: account.balance for account_id, account in accounts.items()}


def check_labels(labels: Sequence[str] | None, seat_count: int) -> None:
    """One label per seat, none shared: a page that names two seats alike tells a player nothing."""
    if labels is None:
        return
    if len(labels) != seat_count:
        raise InvalidRequest(
            f"{len(labels)} seat labels for {seat_count} seats: give one per seat, the Vigo's first",
            field="body.seat_labels",
        )
    seen: dict[str, int] = {}
    for index, label in enumerate(labels):
        if label.casefold() in seen:
            raise InvalidRequest(
                f"seat {index}'s label {label!r} is seat {seen[label.casefold()]}'s already",
                field=f"body.seat_labels.{index}",
            )
        seen[label.casefold()] = index


def chain_for(mode: str, beacon_chain: BeaconChain | None) -> BeaconChain | None:
    """The chain a new game of this fairness mode (the request's, or the tenant's default) commits to:
    none in the default mode."""
    if mode != "beacon":
        return None
    if beacon_chain is None:
        raise InvalidRequest(
            "this service plays no beacon-mode games: it has no drand relays", field="body.fairness_mode"
        )
    return beacon_chain


def _rfc3339(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")
