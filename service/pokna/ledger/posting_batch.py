"""The posting batch: the document ledger_post() reads (service/pokna/sql/ledger_post.sql), as a type.

Built by pokna.ledger.store_postgresql.batch_document, once a posting is drafted and its hashed bytes
encoded (pokna.ledger.drafts); sent inside a game write (pokna.dealer.game_write_document) or a ledger move
(pokna.ledger.move_document), whose functions refuse a batch of a version they do not read before it
reaches ledger_post(). Frozen dataclasses rather than pydantic models: every field is built here from
values already checked, so validating them again would only cost the hot path's CPU.

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

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

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
