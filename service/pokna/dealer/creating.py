"""Creating a game (POST /v1/games): the seats checked against the ledger's wallets, the stake against the
rules, the server seed drawn and sealed, and the commitment signed before anyone can choose a client seed
or roll. Three round trips, no thread, no ORM, in the keyed transaction (pokna.idempotency.keyed):

1. Authenticate the API key, and claim the Idempotency-Key if one was sent, in one autocommit statement.
2. BEGIN, hold the claim, and read the seats' wallets (pokna.ledger.accounts_aio) and, when the request
   names no rake or no fairness mode, the tenant's defaults (pokna.tenants.settings): one pipeline.
3. Decided in Python (the checks, in the order the request's fields come, and `new_game_records`), the
   answer built once; then one pipeline: the pot account, the game with its seats, first event and public
   link, game_write() with no step for the announcement and the stored answer, and COMMIT.

The answer's bytes are what is sent and what a retry under the same key gets back. A table's round is
created in the table's own transaction, from the same records (pokna.dealer.tables).
"""

from __future__ import annotations

import secrets
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from psycopg import AsyncConnection

from pokna import ledger
from pokna.db.types import new_id, utc_now
from pokna.dealer.action.answer import CREATED
from pokna.dealer.action.locked import Clock
from pokna.dealer.action.rules_step import number_events
from pokna.dealer.announcements import announce_created
from pokna.dealer.proof_signing import signed_terms
from pokna.dealer.rake import RakeTerms, game_config, tenant_defaults
from pokna.dealer.records import EventRecord, GameRecord, SeatRecord
from pokna.dealer.store_postgres import insert_game_statements
from pokna.dealer.view import game_out
from pokna.dealer.writes import GAME_WRITE, GameWrite
from pokna.errors import InvalidRequest
from pokna.idempotency.keyed import Answer, Caller, Claim, Keyed, keyed, transaction
from pokna.ledger.accounts_aio import ACCOUNT_SUMMARIES, OPEN_ACCOUNT, new_account, summaries
from pokna.ledger.model import AccountKind
from pokna.outbox import Gathered
from pokna.service_keys import ServiceKeys
from pokna.tenants.settings import GAME_DEFAULTS
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


async def create_game(
    connection: AsyncConnection[Any],
    keys: ServiceKeys,
    clock: Clock,
    caller: Caller,
    sent: Keyed | None,
    terms: NewGame,
    beacon_chain: BeaconChain | None = None,
) -> Answer:
    """The new game's answer (201). `beacon_chain`: the drand chain this service plays beacon-mode
    games against, committed to in the receipt of such a game."""
    account_ids, fields = seated(terms)

    async def reads(tenant_id: str) -> tuple[psycopg.AsyncCursor[Any], psycopg.AsyncCursor[Any] | None]:
        accounts = await connection.execute(
            ACCOUNT_SUMMARIES, {"tenant_id": tenant_id, "account_ids": account_ids}
        )
        if terms.rake is not None and terms.fairness_mode is not None:
            return accounts, None
        return accounts, await connection.execute(GAME_DEFAULTS, {"tenant_id": tenant_id})

    async def create(caller: Caller, claim: Claim | None) -> Answer:
        check_distinct(account_ids, fields)
        async with transaction(connection, caller, claim) as opened:
            accounts, defaults = await opened.read(reads)
            found = summaries(await accounts.fetchall())
            balances = seated_balances(found, account_ids, terms.currency, fields)
            check_labels(terms.seat_labels, len(account_ids))
            default_rake, mode = (
                await tenant_defaults(defaults) if defaults is not None else (RakeTerms(), None)
            )
            config = game_config(
                terms.stake, terms.challenge_raise, len(terms.player_account_ids), terms.rake or default_rake
            )
            chain = beacon_chain_for(terms.fairness_mode or mode, beacon_chain)
            new = NewRecords(terms, config, chain)
            body = await write_new_game(connection, keys, clock, opened.tenant, claim, new, balances)
        return Answer(CREATED, body.encode(), replayed=False)

    return await keyed(connection, caller, sent, create)


@dataclass(frozen=True)
class NewRecords:
    """What a new game's records are made from, once its terms are checked and its defaults read: a table's
    round adds its place (pokna.dealer.tables.deal_round)."""

    terms: NewGame
    config: GameConfig
    chain: BeaconChain | None
    table_id: str | None = None
    round_number: int | None = None


async def write_new_game(
    connection: AsyncConnection[Any],
    keys: ServiceKeys,
    clock: Clock,
    tenant_id: str,
    claim: Claim | None,
    new: NewRecords,
    balances: dict[str, int],
) -> str:
    """The new game's records built and its writes queued in the caller's pipeline, before its COMMIT (the
    last round trip of the module's docstring). The answer's JSON."""
    terms = new.terms
    game_id = new_id("game")
    pot = new_account(tenant_id, AccountKind.GAME_POT, terms.currency, game_id, utc_now())
    game, seats, events = new_game_records(keys, clock, tenant_id, new, game_id, pot["id"])
    outbox = Gathered()
    # once: the answer, and the turn it announces; from the new state itself, which `game.state` holds
    shown = game_out(game, seats, balances, new_game(new.config))
    announce_created(outbox, game, seats, shown)
    body = shown.model_dump_json()
    stored = None if claim is None else {"key": claim.key, "status": CREATED, "body": body}
    await connection.execute(OPEN_ACCOUNT, pot)
    for statement, params in insert_game_statements(game, seats, events):
        await connection.execute(statement, params)
    write = GameWrite(steps=(), outbox=outbox.rows, answer=stored)
    await connection.execute(GAME_WRITE, (tenant_id, write.encode()))
    return body


def seated(terms: NewGame) -> tuple[list[str], list[str]]:
    """The seats' accounts, the Vigo's first, and the request fields that name them."""
    fields = ["body.vigo_account_id"]
    fields += [f"body.player_account_ids.{index}" for index in range(len(terms.player_account_ids))]
    return [terms.vigo_account_id, *terms.player_account_ids], fields


def new_game_records(
    keys: ServiceKeys, clock: Clock, tenant_id: str, new: NewRecords, game_id: str, pot_account_id: str
) -> tuple[GameRecord, list[SeatRecord], list[EventRecord]]:
    """The new game's row, seats and first event, its server seed drawn and sealed and its commitment
    signed: pure but for the seed's randomness (a table's round shares it: pokna.dealer.tables)."""
    terms, config = new.terms, new.config
    account_ids = [terms.vigo_account_id, *terms.player_account_ids]
    server_seed = generate_server_seed()
    commitment = server_seed_hash(server_seed)
    game = GameRecord(
        id=game_id,
        tenant_id=tenant_id,
        table_id=new.table_id,
        round_number=new.round_number,
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
            beacon_chain=new.chain,
        ),
        proof=None,
        public_token=secrets.token_urlsafe(24),  # 192 random bits, never derived from the game id
        turn_deadline_at=clock.now + clock.open_game_ttl,
        created_at=clock.now,
        started_at=None,
        ended_at=None,
    )
    seats = [SeatRecord(seat, account, None, None) for seat, account in enumerate(account_ids)]
    game, events = number_events(game, clock.now, [("game_created", {"server_seed_hash": commitment})])
    return game, seats, events


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
        alike = _as_read(label)
        if alike in seen:
            raise InvalidRequest(
                f"seat {index}'s label {label!r} is seat {seen[alike]}'s already",
                field=f"body.seat_labels.{index}",
            )
        seen[alike] = index


def _as_read(label: str) -> str:
    """What a reader takes the label for: case set aside, and the same letters however they are encoded
    (an accent composed or combined, a full-width letter), which a page shows alike."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", label).casefold())


def beacon_chain_for(mode: str | None, beacon_chain: BeaconChain | None) -> BeaconChain | None:
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
