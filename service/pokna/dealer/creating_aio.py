"""Creating a game on the async path (POST /v1/games): three round trips, no thread, no ORM.

1. Authenticate the API key, and claim the Idempotency-Key if one was sent, in one autocommit statement
   (pokna.idempotency.service).
2. BEGIN, hold the claim, and read the seats' wallets (pokna.ledger.accounts_aio) and, when the request
   names no rake or no fairness mode, the tenant's defaults (pokna.tenants.settings): one pipeline.
3. Checked and built in Python with the synchronous path's own functions (pokna.dealer.creating: the same
   refusals in the same order, the same records, the commitment signed once), the answer built once; then
   one pipeline: the pot account, the game with its seats, first event and public link, game_write() with
   no step for the announcement and the stored answer, and COMMIT.

The answer's bytes are what is sent and what a retry under the same key gets back. A game dealt at a
table, and the commands and tests, create games through the synchronous `create_game`.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import AsyncConnection

from pokna.db.types import new_id, utc_now
from pokna.dealer.announcements import announce_created
from pokna.dealer.creating import (
    NewGame,
    chain_for,
    check_distinct,
    check_labels,
    new_game_records,
    seated,
    seated_balances,
)
from pokna.dealer.deadlines import Clock
from pokna.dealer.playing import Caller, Keyed, Played
from pokna.dealer.rake import RakeTerms, game_config
from pokna.dealer.store_postgres import encode_rows, insert_game_statements
from pokna.dealer.view import game_out
from pokna.dealer.writes import GAME_WRITE
from pokna.idempotency import service as idempotency
from pokna.ledger.accounts_aio import ACCOUNT_SUMMARIES, OPEN_ACCOUNT, new_account, summaries
from pokna.ledger.model import AccountKind
from pokna.outbox import Gathered
from pokna.service_keys import ServiceKeys
from pokna.tenants.settings import GAME_DEFAULTS
from pokna_verify.fairness.beacon import BeaconChain

CREATED = 201


@dataclass(frozen=True)
class _Claim:
    key: str
    token: str


async def create_game(
    connection: AsyncConnection[Any],
    keys: ServiceKeys,
    clock: Clock,
    caller: Caller,
    keyed: Keyed | None,
    terms: NewGame,
    beacon_chain: BeaconChain | None = None,
) -> Played:
    """The new game's answer (201), as pokna.dealer.creating.create_game builds it; `beacon_chain` as there."""
    if keyed is None:
        tenant_id = caller.tenant_id
        if tenant_id is None:
            assert caller.api_key_digest is not None
            tenant_id = await idempotency.authenticate(connection, caller.api_key_digest)
        return await _create(connection, keys, clock, tenant_id, None, terms, beacon_chain)
    token = secrets.token_hex(16)
    claimed = await idempotency.authenticate_and_claim(
        connection, caller.api_key_digest, caller.tenant_id, keyed.key, keyed.fingerprint, token, utc_now()
    )
    if claimed.stored is not None:
        return Played(claimed.stored.status, str(claimed.stored.body).encode(), replayed=True)
    try:
        claim = _Claim(keyed.key, token)
        return await _create(connection, keys, clock, claimed.tenant_id, claim, terms, beacon_chain)
    except BaseException:
        await idempotency.release(connection, claimed.tenant_id, keyed.key, token)
        raise


async def _create(
    connection: AsyncConnection[Any],
    keys: ServiceKeys,
    clock: Clock,
    tenant_id: str,
    claim: _Claim | None,
    terms: NewGame,
    beacon_chain: BeaconChain | None,
) -> Played:
    account_ids, fields = seated(terms)
    check_distinct(account_ids, fields)
    try:
        async with connection.pipeline() as pipeline:
            await connection.execute("BEGIN", prepare=False)
            try:
                hold = None
                if claim is not None:
                    hold = await connection.execute(
                        idempotency.HOLD, {"tenant_id": tenant_id, "key": claim.key}
                    )
                accounts = await connection.execute(
                    ACCOUNT_SUMMARIES, {"tenant_id": tenant_id, "account_ids": account_ids}
                )
                defaults = None
                if terms.rake is None or terms.fairness_mode is None:
                    defaults = await connection.execute(GAME_DEFAULTS, {"tenant_id": tenant_id})
                await pipeline.sync()
                if hold is not None and claim is not None:
                    idempotency.held_claim(await hold.fetchone(), claim.token)
                found = summaries(await accounts.fetchall())
                balances = seated_balances(found, account_ids, terms.currency, fields)
                check_labels(terms.seat_labels, len(account_ids))
                bps, cap, mode = await _one(defaults) if defaults is not None else (0, None, None)
                rake = terms.rake or RakeTerms(bps, cap)
                config = game_config(terms.stake, terms.challenge_raise, len(terms.player_account_ids), rake)
                chain = chain_for(terms.fairness_mode or mode, beacon_chain)
                game_id = new_id("game")
                pot = new_account(tenant_id, AccountKind.GAME_POT, terms.currency, game_id, utc_now())
                game, seats, events = new_game_records(
                    keys, clock, tenant_id, terms, config, chain, game_id, pot["id"]
                )
                outbox = Gathered()
                announce_created(outbox, game, seats, balances)
                body = game_out(game, seats, balances).model_dump_json()
                stored = None if claim is None else {"key": claim.key, "status": CREATED, "body": body}
                await connection.execute(OPEN_ACCOUNT, pot)
                for statement, params in insert_game_statements(game, seats, events):
                    await connection.execute(statement, params)
                write = {"steps": [], "outbox": outbox.rows, "answer": stored}
                await connection.execute(GAME_WRITE, (tenant_id, encode_rows(write)))
                await connection.execute("COMMIT", prepare=False)
            except BaseException:
                await connection.execute("ROLLBACK", prepare=False)
                raise
    except psycopg.Error:
        await connection.close()
        raise
    return Played(CREATED, body.encode(), replayed=False)


async def _one(cursor: psycopg.AsyncCursor[Any]) -> tuple[Any, ...]:
    row = await cursor.fetchone()
    assert row is not None, "an authenticated caller's tenant exists"
    return tuple(row)
