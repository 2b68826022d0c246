"""Deposits and withdrawals on the async path: three round trips, no thread, no ORM, in the keyed
transaction (pokna.idempotency.keyed).

1. Authenticate the API key and claim the Idempotency-Key (required here) on the tenant's rows, autocommit;
   a key seen before replays the stored answer.
2. BEGIN, hold the claim, take a free chain of the tenant's (`ledger_take_chain()`: the wallet's own if it
   is free, else the next free one; its head then held until COMMIT) and read the wallet with its tenant's
   funding sub-accounts in its currency: one pipeline, one round trip. The move posts on the chain it took,
   against that chain's funding sub-account, so one tenant's concurrent moves never queue behind each
   other's COMMIT on one chain (docs/ledger.md, "Chains").
3. The transaction drafted and its hashed bytes encoded in Python (pokna.ledger.drafts, as every posting
   is), then one ledger_move() call (service/pokna/sql/ledger_move.sql) with COMMIT behind it: it posts
   through ledger_post(), records the announcement and stores the answer, setting on each the seq, the
   hashes and the balance only the ledger's lock can tell by name (pokna.ledger.move_document), and
   returns the answer's bytes.
   The first money in a currency on a chain opens the tenant's funding sub-account there first, in the same
   transaction (`pokna.ledger.accounts_aio.open_system_account`: one round trip more, once).

The one way money enters and leaves a wallet, for the API and the tests alike: a wallet of the caller's
tenant, a player wallet, an amount in range; InsufficientFunds (and nothing posted) for a withdrawal past
the balance.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import psycopg
from psycopg import AsyncConnection

from pokna import metrics
from pokna.db import sqlstates
from pokna.db.models.ledger import MAX_ABS_BALANCE
from pokna.errors import InvalidRequest, WalletHeld
from pokna.idempotency.keyed import Answer, Caller, Claim, Keyed, Refusals, keyed, transaction
from pokna.ledger.accounts import system_external_id
from pokna.ledger.accounts_aio import open_system_account
from pokna.ledger.announcements import announce_funding
from pokna.ledger.drafts import draft_of, posted, unchained
from pokna.ledger.errors import AccountNotFound, AmountOutOfRange, InsufficientFunds, InvalidPostings
from pokna.ledger.model import AccountKind, Posting, TransactionKind, check_amount
from pokna.ledger.move_document import Announcements, LedgerMove
from pokna.ledger.posting_batch import batch_document
from pokna.ledger.schemas import JournalTransactionOut
from pokna_verify.invariant import present
from pokna_verify.ledger.chain import chain_for

LEDGER_MOVE = "SELECT ledger_move(%s, %s::json)"

TAKE_CHAIN = "SELECT ledger_take_chain(%(tenant_id)s, %(preferred)s::smallint)"
"""The chain the move posts on, its head locked (service/pokna/sql/ledger_take_chain.sql)."""

_WALLET_AND_FUNDING = (
    "SELECT wallet.kind, wallet.currency, (SELECT json_object_agg(funding.external_id, funding.id) "
    "FROM account AS funding WHERE funding.tenant_id = %(tenant_id)s AND funding.kind = 'external_funding' "
    "AND funding.currency = wallet.currency) "
    "FROM account AS wallet WHERE wallet.id = %(account_id)s AND wallet.tenant_id = %(tenant_id)s"
)
"""The wallet's kind and currency, and the tenant's funding sub-accounts open in that currency, by external
id (accounts.system_external_id; at most one a chain): the chain is taken in the same round trip."""


@dataclass(frozen=True)
class Movement:
    kind: Literal["deposit", "withdrawal"]
    account_id: str
    amount: int
    reference: str | None
    metadata: Mapping[str, Any] | None


async def move(
    connection: AsyncConnection[Any], api_key_digest: str, key: str, fingerprint: str, movement: Movement
) -> Answer:
    """The movement posted under its Idempotency-Key (required here), or the key's stored answer."""
    caller, sent = Caller(api_key_digest=api_key_digest), Keyed(key, fingerprint)
    return await keyed(
        connection, caller, sent, lambda caller, claim: _post(connection, caller, claim, movement)
    )


async def _post(
    connection: AsyncConnection[Any], caller: Caller, claim: Claim | None, movement: Movement
) -> Answer:
    claim = present(claim, "a money move is always keyed")
    kind = TransactionKind.DEPOSIT if movement.kind == "deposit" else TransactionKind.WITHDRAWAL
    signed = movement.amount if kind is TransactionKind.DEPOSIT else -movement.amount
    check_amount(signed)
    tenant_id = claim.tenant_id

    async def wallet(tenant_id: str) -> tuple[psycopg.AsyncCursor[Any], psycopg.AsyncCursor[Any]]:
        # The wallet's own chain first: alone, a tenant's moves go where they went before chains were free.
        params = {"account_id": movement.account_id, "tenant_id": tenant_id}
        taken = await connection.execute(
            TAKE_CHAIN, {"tenant_id": tenant_id, "preferred": chain_for(movement.account_id)}
        )
        return taken, await connection.execute(_WALLET_AND_FUNDING, params)

    async with transaction(connection, caller, claim, REFUSALS) as opened:
        taken, read = await opened.read(wallet)
        found = await read.fetchone()
        if found is None:
            raise AccountNotFound(f"no account {movement.account_id}", account_id=movement.account_id)
        wallet_kind, currency, funding_ids = found
        if wallet_kind != AccountKind.PLAYER_WALLET:
            raise InvalidRequest(
                f"{movement.kind}s go to player wallets, not a {wallet_kind}", field="path.account_id"
            )
        took = present(await taken.fetchone(), "the chain the move takes")
        chain = int(took[0])
        funding_id = (funding_ids or {}).get(system_external_id(currency, chain))
        if funding_id is None:  # the first money on this chain in this currency
            funding_id = await open_system_account(
                connection, tenant_id, AccountKind.EXTERNAL_FUNDING, currency, chain
            )
        document = _document(tenant_id, claim.key, kind, signed, movement, currency, funding_id, chain)
        started = time.perf_counter()
        answer = await connection.execute(LEDGER_MOVE, (tenant_id, document))
    row = present(await answer.fetchone(), "ledger_move() answers one row")
    metrics.ledger_posted(1, time.perf_counter() - started)
    return Answer(201, str(row[0]).encode(), replayed=False)


def _document(
    tenant_id: str,
    key: str,
    kind: TransactionKind,
    signed: int,
    movement: Movement,
    currency: str,
    funding_id: str,
    chain: int,
) -> str:
    postings = [Posting(movement.account_id, signed), Posting(funding_id, -signed)]
    draft = draft_of(kind, postings, movement.reference, movement.metadata)
    currency_of = {movement.account_id: currency, funding_id: currency}
    written = unchained(tenant_id, draft, currency_of, chain)
    # The answer and the announcement with a stand-in of the right type where ledger_move() sets what only
    # ledger_post() can tell, by name (pokna.ledger.move_document).
    stood_in = posted(written, 0, "", "")
    outbox = Announcements()
    announce_funding(outbox, stood_in, movement.account_id, currency, 0)
    return LedgerMove(
        batch=batch_document(sorted(currency_of), {}, [written], chain),
        wallet_id=movement.account_id,
        announcements=tuple(outbox.rows),
        answer_key=key,
        answer_body=JournalTransactionOut.of(stood_in, balance=0).model_dump(mode="json"),
    ).encode()


def _refusal(detail: Mapping[str, Any]) -> Exception:
    """ledger_post()'s refusal (`pokna.db.sqlstates.LEDGER_REFUSED`, its reason in the error's detail), as
    the ledger's typed error."""
    status, account_id = detail.get("status"), str(detail.get("account_id"))
    if status == "insufficient_funds":
        return InsufficientFunds(account_id, int(detail["balance"]), int(detail["change"]))
    if status == "balance_out_of_range":
        return AmountOutOfRange(
            f"account {account_id} would hold {detail['balance']}, beyond the bound of {MAX_ABS_BALANCE}",
            account_id=account_id,
            limit=MAX_ABS_BALANCE,
        )
    if status == "account_not_found":
        return AccountNotFound(f"no account {account_id}", account_id=account_id)
    return InvalidPostings(f"the ledger refused the posting ({status})")


REFUSALS: Refusals = {
    sqlstates.LEDGER_REFUSED: lambda error: _refusal(sqlstates.detail_of(error)),
    sqlstates.WALLET_HELD: lambda error: WalletHeld(sqlstates.message_of(error)),
}
"""What the database's refusal of a movement means: ledger_post() refused (nothing was written), or a
beacon roll holds the wallet."""
