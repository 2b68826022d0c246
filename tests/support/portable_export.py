"""A second opinion on the ledger's JSONL export: each line built in Python from the journal's rows, read
here through a session, to compare with the lines PostgreSQL builds (pokna.ledger.store_postgresql
.jsonl_lines), which are the export."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from sqlalchemy import Row, text
from sqlalchemy.orm import Session

from pokna_verify.ledger.chain import format_timestamp

_JOURNAL_ROWS = text(
    """
    SELECT t.chain, t.seq, t.id, t.kind, t.reference, t.metadata, t.created_at, t.prev_hash, t.hash,
        p.account_id, p.amount, p.currency
    FROM journal_transaction AS t
    JOIN posting AS p ON p.tenant_id = t.tenant_id AND p.transaction_id = t.id
    WHERE t.tenant_id = :tenant_id
    ORDER BY t.chain, t.seq, p.leg
    """
)


def journal_groups(session: Session, tenant_id: str) -> Iterator[list[Row[Any]]]:
    """Every transaction of the tenant's journal as its rows (one per posting, in leg order), in (chain,
    seq) order."""
    group: list[Row[Any]] = []
    for row in session.execute(_JOURNAL_ROWS, {"tenant_id": tenant_id}):
        if group and (group[0].chain, group[0].seq) != (row.chain, row.seq):
            yield group
            group = []
        group.append(row)
    if group:
        yield group


def transaction_line(tenant_id: str, group: list[Row[Any]]) -> dict[str, Any]:
    """One journal transaction's line, from its rows (one per posting)."""
    first = group[0]
    return {
        "chain": first.chain,
        "seq": first.seq,
        "id": first.id,
        "tenant_id": tenant_id,
        "kind": first.kind,
        "reference": first.reference,
        "metadata": first.metadata,
        "created_at": format_timestamp(first.created_at),
        "postings": [
            {"account_id": row.account_id, "amount": row.amount, "currency": row.currency} for row in group
        ],
        "prev_hash": first.prev_hash,
        "hash": first.hash,
    }


def portable_jsonl(session: Session, tenant_id: str) -> Iterator[str]:
    """The journal's rows grouped and encoded compactly by the standard library."""
    encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    for group in journal_groups(session, tenant_id):
        yield encode(transaction_line(tenant_id, group)) + "\n"
