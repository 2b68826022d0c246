"""A second opinion on the ledger's JSONL export: each line built in Python from the journal's rows
(pokna.ledger.books_repository, grouped by pokna.ledger.export), to compare with the lines PostgreSQL
builds (pokna.ledger.store_postgresql.jsonl_lines), which are the export."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Row

from pokna_verify.ledger.chain import format_timestamp


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
