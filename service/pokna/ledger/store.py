"""The ledger's storage interface: the JSONL export, written from raw columns into lines directly
(store_postgresql). Everything else lives in the repositories; what a posting sends to ledger_post() is
built by pokna.ledger.batches (a game's transfers) and pokna.ledger.moving (a deposit or withdrawal).

The one implementation is a module-level instance in the export (`PostgresqlLedgerStore()`);
tests/ledger/test_ledger_stores.py holds it to this interface.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from sqlalchemy.orm import Session

from pokna.ledger.books_repository import SeqRange


class LedgerStore:
    """Implemented by store_postgresql; every method must be overridden."""

    def jsonl_lines(self, session: Session, tenant_id: str, ranges: Sequence[SeqRange]) -> Iterator[str]:
        """The JSONL export of `ranges` (one chain each, in the order given), one transaction per line
        (pokna.ledger.export)."""
        raise NotImplementedError
