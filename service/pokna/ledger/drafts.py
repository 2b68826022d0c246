"""A journal transaction before its place in the chain is known: validated, given its ids and timestamp,
laid out as rows, and its hashed bytes encoded around the two values only the head lock can tell.

No database: a game step's transfers (pokna.ledger.posting_batch.transfer_batch) and a deposit or withdrawal
(pokna.ledger.moving) are built from here, so every transaction is drafted and hashed the same way, all of
it before any lock is taken.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from pokna.db.types import new_id, utc_now
from pokna.ledger.errors import InvalidPostings
from pokna.ledger.model import PostedTransaction, Posting, TransactionKind, check_amount, check_metadata
from pokna_verify.ledger.chain import format_timestamp, hash_parts

MAX_TEXT = 200


@dataclass(frozen=True)
class Draft:
    """One transaction as asked for, checked for everything that needs no account: kind, text lengths,
    amounts, metadata."""

    kind: str
    postings: tuple[Posting, ...]
    reference: str | None
    metadata: dict[str, Any]


def draft_of(
    kind: TransactionKind | str,
    postings: Sequence[Posting],
    reference: str | None,
    metadata: Mapping[str, Any] | None,
) -> Draft:
    try:
        transaction_kind = TransactionKind(kind)
    except ValueError:
        raise InvalidPostings(f"transaction kind {kind!r} is unknown") from None
    if reference is not None and not 0 < len(reference) <= MAX_TEXT:
        raise InvalidPostings(f"reference must be 1-{MAX_TEXT} characters")
    if reference is not None and "\x00" in reference:
        raise InvalidPostings("reference must not contain the NUL character (PostgreSQL text cannot)")
    for index, posting in enumerate(postings):
        check_amount(posting.amount, f"postings[{index}].amount")
    return Draft(transaction_kind.value, tuple(postings), reference, check_metadata(metadata))


def account_ids(drafts: Sequence[Draft]) -> set[str]:
    return {posting.account_id for draft in drafts for posting in draft.postings}


class Unchained(NamedTuple):
    """A transaction's row without its place in the chain (seq, prev_hash, hash), its posting rows in leg
    order, and the hashed bytes around that place (chain.hash_parts)."""

    row: dict[str, Any]
    postings: list[dict[str, Any]]
    parts: tuple[bytes, bytes, bytes]


def unchained(
    tenant_id: str,
    draft: Draft,
    currency_of: Mapping[str, str],
    chain: int,
    *,
    ids: Callable[[str], str] = new_id,
    now: datetime | None = None,
) -> Unchained:
    """Ids and created_at are drawn here, before the lock: created_at follows seq only to within the
    time a writer waited for the head. `chain`: the tenant's hash chain it goes on (hashed unless 0).
    `ids` and `now`: a game decision's own (pokna.dealer.action.locked.Env), so it is decided without the wall
    clock or a random source of its own."""
    transaction_id = ids("txn")
    created_at = utc_now() if now is None else now
    legs = [
        (posting.account_id, posting.amount, currency_of[posting.account_id]) for posting in draft.postings
    ]
    parts = hash_parts(
        chain=chain,
        tenant_id=tenant_id,
        transaction_id=transaction_id,
        kind=draft.kind,
        reference=draft.reference,
        metadata=draft.metadata,
        created_at=format_timestamp(created_at),
        postings=legs,
    )
    row = {
        "id": transaction_id,
        "tenant_id": tenant_id,
        "chain": chain,
        "kind": draft.kind,
        "reference": draft.reference,
        "metadata": draft.metadata,
        "created_at": created_at,
    }
    posting_rows = [
        {"id": ids("pst"), "account_id": account_id, "amount": amount, "currency": currency}
        for account_id, amount, currency in legs
    ]
    return Unchained(row, posting_rows, parts)


def posted(written: Unchained, seq: int, prev_hash: str, hash_: str) -> PostedTransaction:
    row = written.row
    return PostedTransaction(
        id=row["id"],
        tenant_id=row["tenant_id"],
        seq=seq,
        kind=row["kind"],
        reference=row["reference"],
        metadata=row["metadata"],
        postings=tuple(
            Posting(posting["account_id"], posting["amount"], posting["currency"])
            for posting in written.postings
        ),
        prev_hash=prev_hash,
        hash=hash_,
        created_at=row["created_at"],
        chain=row["chain"],
    )
