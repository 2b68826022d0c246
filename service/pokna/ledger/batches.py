"""A game step's money moves as ledger_post()'s document, built before any lock and posted by the caller's
own write (the dealer's game_write(): postings, the step and its announcements in one round trip).

One two-leg journal transaction per transfer, in order, so that every ante, contribution and payout is
its own auditable line; ledger_post() posts them all or none. Every account a game moves money between holds the game's
currency (checked when the game was seated, and again by the posting trigger), so no account is read
here; ledger_post() checks under its locks that each exists in the tenant and still holds the balance the
step was decided on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pokna.ledger.drafts import account_ids, draft_of, unchained
from pokna.ledger.model import AccountTransfer, check_postings
from pokna.ledger.posting_batch import PostingBatch
from pokna.ledger.store_postgresql import batch_document


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
    """`chain`: the tenant's hash chain the transfers go on (a game's: chain_for(game id)); `ids` and `now`:
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
