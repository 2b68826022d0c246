"""The posting batch: the document ledger_post() reads (service/pokna/sql/ledger_post.sql), as a type, and
how it is built.

Built by `batch_document` once a posting is drafted and its hashed bytes encoded (pokna.ledger.drafts): for
a game step's transfers by `transfer_batch`, for a deposit or a withdrawal by pokna.ledger.moving. Sent
inside a game write (pokna.dealer.writes) or a ledger move (pokna.ledger.move_document), whose functions
refuse a batch of a version they do not read before it reaches ledger_post(). Frozen dataclasses rather
than pydantic models: every field is built here from values already checked, so validating them again
would only cost the hot path's CPU.

Its JSON value (`as_json`):

    {"version": 1, "chain": 3, "accounts": ["acct_a", "acct_b"], "expected_balances": {"acct_a": 120},
     "transactions": [{"id": "txn_...", "kind": "ante", "reference": "game_...",
                       "metadata": "<its JSON text>", "created_at": "2026-...Z",
                       "before_prev": "<bytea hex>", "before_seq": "<bytea hex>", "rest": "<bytea hex>",
                       "postings": [{"id": "pst_...", "account_id": "acct_a", "amount": -5,
                                     "currency": "CREDIT"}, ...]}, ...]}

Transactions in seq order, postings in leg order. The metadata travels as its JSON text, stored as it is
(a jsonb member would be re-ordered); the hashed bytes (pokna_verify.ledger.chain.hash_parts) as bytea hex.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from pokna.ledger.drafts import Unchained, account_ids, draft_of, unchained
from pokna.ledger.model import AccountTransfer, check_postings
from pokna_verify.ledger.chain import format_timestamp

POSTING_BATCH_VERSION = 1
"""The batch's layout as game_write() and ledger_move() read it: raise it with theirs when a field changes."""


@dataclass(frozen=True, slots=True)
class BatchTransaction:
    id: str
    kind: str
    reference: str | None
    metadata: str
    """Its JSON text, stored as it is."""
    created_at: str
    parts: tuple[bytes, bytes, bytes]
    """The hashed bytes around prev_hash and seq (pokna_verify.ledger.chain.hash_parts)."""
    postings: tuple[Mapping[str, Any], ...]
    """In leg order, each {id, account_id, amount, currency}."""

    def as_json(self) -> dict[str, Any]:
        before_prev, before_seq, rest = self.parts
        return {
            "id": self.id,
            "kind": self.kind,
            "reference": self.reference,
            "metadata": self.metadata,
            "created_at": self.created_at,
            "before_prev": "\\x" + before_prev.hex(),
            "before_seq": "\\x" + before_seq.hex(),
            "rest": "\\x" + rest.hex(),
            "postings": self.postings,
        }


@dataclass(frozen=True, slots=True)
class PostingBatch:
    chain: int
    """The tenant's hash chain the batch goes on."""
    accounts: tuple[str, ...]
    """Every account to lock: those the postings touch and those expected_balances names."""
    expected_balances: Mapping[str, int]
    """{account id: balance} the caller decided on."""
    transactions: tuple[BatchTransaction, ...]
    version: int = POSTING_BATCH_VERSION

    def locking(self, accounts: tuple[str, ...]) -> PostingBatch:
        """The same batch, locking `accounts` (pokna.dealer.writes.locking_all_first)."""
        return replace(self, accounts=accounts)

    def as_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "chain": self.chain,
            "accounts": self.accounts,
            "expected_balances": dict(self.expected_balances),
            "transactions": [transaction.as_json() for transaction in self.transactions],
        }


def batch_document(
    account_ids: list[str], expected: Mapping[str, int], written: list[Unchained], chain: int
) -> PostingBatch:
    """The batch ledger_post() reads, from the drafted transactions in seq order."""
    return PostingBatch(
        chain=chain,
        accounts=tuple(account_ids),
        expected_balances=dict(expected),
        transactions=tuple(
            BatchTransaction(
                id=transaction.row["id"],
                kind=transaction.row["kind"],
                reference=transaction.row["reference"],
                metadata=json.dumps(transaction.row["metadata"]),
                created_at=format_timestamp(transaction.row["created_at"]),
                parts=transaction.parts,
                postings=tuple(transaction.postings),
            )
            for transaction in written
        ),
    )


@dataclass(frozen=True)
class TransferBatch:
    document: PostingBatch
    """ledger_post()'s `p_batch`."""
    transaction_ids: list[str]
    """The journal transaction of each transfer, in order."""
    chain: int
    """The tenant's hash chain they go on."""


def transfer_batch(
    *,
    tenant_id: str,
    currency: str,
    transfers: Sequence[AccountTransfer],
    reference: str | None,
    metadata: Mapping[str, Any] | None,
    expected_balances: Mapping[str, int],
    chain: int,
    ids: Callable[[str], str],
    now: datetime,
) -> TransferBatch:
    """A game step's money moves as ledger_post()'s document, built before any lock and posted by the
    caller's own write (the dealer's game_write(): postings, the step and its announcements in one round trip).

    One two-leg journal transaction per transfer, in order, so that every ante, contribution and payout is
    its own auditable line; ledger_post() posts them all or none. Every account a game moves money between
    holds the game's currency (checked when the game was seated, and again by the posting trigger), so no
    account is read here; ledger_post() checks under its locks that each exists in the tenant and still
    holds the balance the step was decided on.

    `chain`: the tenant's hash chain the transfers go on (a game's: chain_for(game id)); `ids` and `now`:
    the decision's (pokna.ledger.drafts.unchained)."""
    drafts = [draft_of(transfer.kind, transfer.postings(), reference, metadata) for transfer in transfers]
    involved = sorted(account_ids(drafts) | expected_balances.keys())
    currency_of = dict.fromkeys(involved, currency)
    for draft in drafts:
        check_postings(draft.postings, currency_of)
    written = [unchained(tenant_id, draft, currency_of, chain, ids=ids, now=now) for draft in drafts]
    return TransferBatch(
        batch_document(involved, expected_balances, written, chain),
        [row.row["id"] for row in written],
        chain,
    )
