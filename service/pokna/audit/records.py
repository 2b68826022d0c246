"""The audit bundle's records: the contract docs/audit.md describes for an auditor.

A bundle is JSON Lines, one typed record per line, each a JSON object whose `type` says what it is:

- the header (`pokna.audit.bundle`), first, signed: tenant, range of seqs and the links at its two ends;
- the key ring (`pokna.fairness.keys`), second, as `GET /v1/fairness/keys` publishes it;
- `account` records, each just before the first transaction that touches the account;
- `game` records, each just before the first transaction of the game in the range, with its proof;
- `transaction` records: the JSONL ledger export's lines, in seq order, with `type` added;
- checkpoints (`pokna.ledger.checkpoint`, the signed document as is), each just after the transaction at
  its seq;
- the trailer (`end`), last, counting the records of each type before it.
"""

from __future__ import annotations

import json
from typing import Any, Final

from pokna.ledger.audit import CHECKPOINT_TYPE

FORMAT_VERSION: Final = 1
HEADER: Final = "pokna.audit.bundle"
KEY_RING: Final = "pokna.fairness.keys"
ACCOUNT: Final = "account"
GAME: Final = "game"
TRANSACTION: Final = "transaction"
CHECKPOINT: Final = CHECKPOINT_TYPE
END: Final = "end"
COUNTED: Final = (ACCOUNT, GAME, TRANSACTION, CHECKPOINT)
MEDIA_TYPE: Final = "application/x-ndjson"
# A transaction of the journal is one of these, or a transfer of a game (it names the game).
DEPOSIT: Final = "deposit"
WITHDRAWAL: Final = "withdrawal"


def header_document(
    *,
    tenant_id: str,
    from_seq: int,
    to_seq: int,
    first_prev_hash: str,
    last_hash: str,
    transactions: int,
    created_at: str,
) -> dict[str, Any]:
    """The header before it is signed (the writer signs it with the service key)."""
    return {
        "type": HEADER,
        "format": FORMAT_VERSION,
        "tenant_id": tenant_id,
        "from_seq": from_seq,
        "to_seq": to_seq,
        "first_prev_hash": first_prev_hash,
        "last_hash": last_hash,
        "transactions": transactions,
        "created_at": created_at,
    }


def account_record(account_id: str, kind: str, currency: str) -> dict[str, Any]:
    return {"type": ACCOUNT, "account_id": account_id, "kind": kind, "currency": currency}


def game_record(
    *,
    game_id: str,
    status: str,
    pot_account_id: str,
    transfers_before: int,
    proof: dict[str, Any] | None,
) -> dict[str, Any]:
    """`transfers_before`: how many of the game's transfers were posted before the bundle's first seq."""
    return {
        "type": GAME,
        "game_id": game_id,
        "status": status,
        "pot_account_id": pot_account_id,
        "transfers_before": transfers_before,
        "proof": proof,
    }


def transaction_record_text(export_line: str) -> str:
    """An export line (a JSON object's text) as a bundle record: `type` first, every other byte kept."""
    opening = export_line.index("{")
    return '{"type":"transaction",' + export_line[opening + 1 :]


def end_record(counts: dict[str, int]) -> dict[str, Any]:
    return {"type": END, "records": {name: counts.get(name, 0) for name in COUNTED}}


def is_bundle(first_line: bytes) -> bool:
    """A bundle opens with its header; a plain ledger export with a transaction."""
    try:
        record = json.loads(first_line)
    except ValueError:
        return False
    return isinstance(record, dict) and record.get("type") == HEADER
