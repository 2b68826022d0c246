"""The ledger's storage interface: what must happen in one round trip under the ledger's locks.

Posting: one round trip to ledger_post() takes the locks, checks, hashes and writes
(store_postgresql). The JSONL export: raw columns written into lines directly. Everything else lives in
the repositories.

The one implementation is a module-level instance in the modules that post and export
(`PostgresqlLedgerStore()`); tests/ledger/test_ledger_stores.py holds it to this interface.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import NamedTuple

from sqlalchemy.orm import Session

from pokna.ledger.books_repository import SeqRange
from pokna.ledger.drafts import Draft
from pokna.ledger.model import PostedTransaction


class Posted(NamedTuple):
    """What one posting did: the transactions it wrote (or, for a retry, the originals), and the balances
    of the accounts it locked as they are now (empty for a retry, which locks none)."""

    transactions: list[PostedTransaction]
    balances: dict[str, int]


class LedgerStore:
    """Implemented by store_postgresql; every method must be overridden."""

    def post(
        self,
        session: Session,
        tenant_id: str,
        drafts: Sequence[Draft],
        expected_balances: Mapping[str, int],
        chain: int,
    ) -> Posted:
        """Write `drafts` in order as the next transactions of the tenant's `chain`, all or none.

        Locks that chain's head, then every account involved and every account of `expected_balances`
        in ascending id order; the locks stay held until the caller's transaction ends. A retry of the
        same request (same idempotency keys and request hash) answers the originals and writes nothing.
        Any refusal is one of the ledger's typed errors, raised through pokna.ledger.refusals or the
        checks of pokna.ledger.model, and writes nothing."""
        raise NotImplementedError

    def jsonl_lines(self, session: Session, tenant_id: str, ranges: Sequence[SeqRange]) -> Iterator[str]:
        """The JSONL export of `ranges` (one chain each, in the order given), one transaction per line
        (pokna.ledger.export)."""
        raise NotImplementedError
