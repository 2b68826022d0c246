"""The audit bundle's records: the contract docs/audit.md describes for an auditor.

A bundle is JSON Lines, one typed record per line, each a JSON object whose `type` says what it is:

- the header (`pokna.audit.bundle`), first, signed: tenant, and per hash chain (`chains`) the range of
  seqs and the links at its two ends; its top-level from_seq/to_seq/first_prev_hash/last_hash are chain
  0's, as in format 1 (null when the bundle is of another chain only);
- the key ring (`pokna.fairness.keys`), second, as `GET /v1/fairness/keys` publishes it;
- `account` records, each just before the first transaction that touches the account;
- `game` records, each just before the first transaction of the game in the range, with its proof;
- `transaction` records: the JSONL ledger export's lines, in (chain, seq) order, with `type` added;
- checkpoints (`pokna.ledger.checkpoint`, the signed document as is), each just after the transaction of
  the first head it pins (in chain order) inside the bundle's range: checkpoint_place;
- since format 3, the public log's signed checkpoint (`pokna.log.checkpoint`) right after the key ring,
  and its leaves (`pokna.log.leaf`) after the journal: pokna_verify.bundle.public_log;
- the trailer (`end`), last, counting the records of each type before it.

Format 1 (before chains) is format 2 with every transaction on chain 0 and no `chains` in the header: the
checker reads both.
"""

from __future__ import annotations

from typing import Any, Final

from pokna_verify.bounded_input import InputLimitError, loads, on_line
from pokna_verify.ledger.check import CHECKPOINT_TYPE

FORMAT_VERSION: Final = 3  # 3: format 2, and the public log's records when the bundle carries them
FORMATS_READ: Final = (1, 2, 3)
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


def chain_entry(
    *, chain: int, from_seq: int, to_seq: int, first_prev_hash: str, last_hash: str, transactions: int
) -> dict[str, Any]:
    """One chain of the header's `chains`: its seqs in the bundle and the links at their two ends."""
    return {
        "chain": chain,
        "from_seq": from_seq,
        "to_seq": to_seq,
        "first_prev_hash": first_prev_hash,
        "last_hash": last_hash,
        "transactions": transactions,
    }


def header_document(
    *,
    tenant_id: str,
    from_seq: int | None,
    to_seq: int | None,
    first_prev_hash: str | None,
    last_hash: str | None,
    chains: list[dict[str, Any]],
    transactions: int,
    created_at: str,
    log_size: int | None = None,
) -> dict[str, Any]:
    """The header before it is signed (the writer signs it with the service key). The top-level range and
    links are chain 0's (null when the range is of another chain); `chains` lists every chain with a
    transaction in the bundle, ascending (chain_entry); `transactions` counts them all."""
    return {
        "type": HEADER,
        "format": FORMAT_VERSION,
        "tenant_id": tenant_id,
        "from_seq": from_seq,
        "to_seq": to_seq,
        "first_prev_hash": first_prev_hash,
        "last_hash": last_hash,
        "chains": chains,
        "transactions": transactions,
        "log_size": log_size,
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
    """`transfers_before`: how many of the game's transfers were posted before its first in the bundle:
    before the bundle's first seq on the game's chain, and any on chain 0 of a game that was in play when
    the journal got its chains (pokna.ledger.audit_reads.transfers_before)."""
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


def end_record(counts: dict[str, int], logged: tuple[str, ...] = ()) -> dict[str, Any]:
    """`logged`: the public log's record types, counted when the bundle carries them."""
    return {"type": END, "records": {name: counts.get(name, 0) for name in (*COUNTED, *logged)}}


def is_bundle(first_line: bytes) -> bool:
    """A bundle opens with its header; a plain ledger export with a transaction."""
    try:
        record = loads(first_line)
    except ValueError:
        return False
    except InputLimitError as error:
        raise on_line(1, error) from None
    return isinstance(record, dict) and record.get("type") == HEADER


Pin = tuple[int, int, str]  # a chain, a seq on it and the hash a checkpoint signs for it


def checkpoint_pins(document: Any) -> list[Pin] | None:
    """The heads a checkpoint document signs, ascending by chain: chain 0's (its `seq` and `hash`), and
    every other chain's of its `heads` (a checkpoint taken before there were chains has none). None when
    the document is not shaped so: `heads`, when present, lists {chain, seq, hash} ascending by chain,
    chain 0's equal to the top-level seq and hash."""
    if not isinstance(document, dict):
        return None
    seq, hash_ = document.get("seq"), document.get("hash")
    if not isinstance(seq, int) or not _is_count(seq) or not isinstance(hash_, str):
        return None
    pins: list[Pin] = [(0, seq, hash_)]
    heads = document.get("heads")
    if heads is None:
        return pins
    if not isinstance(heads, list):
        return None
    last_chain = -1
    for head in heads:
        if not isinstance(head, dict):
            return None
        chain, head_seq, head_hash = head.get("chain"), head.get("seq"), head.get("hash")
        if not (isinstance(chain, int) and isinstance(head_seq, int) and isinstance(head_hash, str)):
            return None
        if not (_is_count(chain) and _is_count(head_seq)) or chain <= last_chain:
            return None
        last_chain = chain
        if chain == 0:
            if (head_seq, head_hash) != (seq, hash_):
                return None
        else:
            pins.append((chain, head_seq, head_hash))
    return pins


def checkpoint_place(pins: list[Pin], ranges: dict[int, tuple[int, int]]) -> tuple[int, int] | None:
    """Where a checkpoint goes in a bundle whose chains cover `ranges` (chain -> (from_seq, to_seq)): right
    after the transaction of its first pin, in chain order, inside them; None when it pins none of them."""
    for chain, seq, _hash in pins:
        span = ranges.get(chain)
        if span is not None and span[0] <= seq <= span[1]:
            return chain, seq
    return None


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
