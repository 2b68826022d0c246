"""The audit bundle's signed range, chain by chain (format 2's header `chains`; format 1's one range, chain 0
alone), against what the bundle holds: nothing cut off, nothing added. Pure; pokna_verify.bundle.check uses it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pokna_verify.ledger.findings import is_chain, is_int

SPAN_FIELDS = ("from_seq", "to_seq", "first_prev_hash", "last_hash")


class Span:
    """One chain as the bundle holds it: its first seq and prev_hash, its last seq and hash, how many."""

    __slots__ = ("first_prev_hash", "first_seq", "last_hash", "last_seq", "transactions")

    def __init__(self, seq: int, prev_hash: str) -> None:
        self.first_seq, self.first_prev_hash = seq, prev_hash
        self.last_seq, self.last_hash = seq, prev_hash
        self.transactions = 0

    def seen(self) -> dict[str, Any]:
        return {
            "from_seq": self.first_seq,
            "to_seq": self.last_seq,
            "first_prev_hash": self.first_prev_hash,
            "last_hash": self.last_hash,
            "transactions": self.transactions,
        }


def signed_chains(chains: object) -> list[dict[str, Any]] | None:
    """Format 2's header `chains` as entries {chain, from_seq, to_seq, ...}, ascending by chain; None when it
    is not such a list."""
    if not isinstance(chains, list):
        return None
    entries: list[dict[str, Any]] = []
    for entry in chains:
        if not isinstance(entry, dict):
            return None
        chain, first, last = entry.get("chain"), entry.get("from_seq"), entry.get("to_seq")
        if not (isinstance(chain, int) and is_chain(chain)):
            return None
        if not (is_int(first) and is_int(last)) or (entries and chain <= entries[-1]["chain"]):
            return None
        entries.append(entry)
    return entries


def span_problems(
    header: Mapping[str, Any],
    version: int | None,
    signed: Sequence[Mapping[str, Any]],
    spans: Mapping[int, Span],
) -> list[str]:
    """What differs between the signed header (`signed`: its chains) and the bundle's `spans`."""
    total = sum(span.transactions for span in spans.values())
    if version == 1:
        span = spans.get(0)
        seen = span.seen() if span is not None else {name: header.get(name) for name in SPAN_FIELDS}
        return _compared(header, seen | {"transactions": total}, "") + [
            _unsigned(chain, spans[chain]) for chain in sorted(set(spans) - {0})
        ]
    if version is None:
        return []
    by_chain = {entry["chain"]: entry for entry in signed}
    problems: list[str] = []
    for chain, entry in by_chain.items():
        span = spans.get(chain)
        problems += _compared(
            entry, span.seen() if span is not None else {"transactions": 0}, f"chain {chain} "
        )
    problems += [_unsigned(chain, spans[chain]) for chain in sorted(set(spans) - set(by_chain))]
    zero = by_chain.get(0)
    if zero is not None:
        problems += [
            f"the signed header says {name} {header.get(name)!r}, its chain 0 {zero.get(name)!r}"
            for name in SPAN_FIELDS
            if header.get(name) != zero.get(name)
        ]
    if header.get("transactions") != total:
        problems.append(
            f"the signed header says transactions {header.get('transactions')!r}, the bundle has {total!r}"
        )
    return problems


def _compared(signed: Mapping[str, Any], seen: Mapping[str, Any], chain: str) -> list[str]:
    return [
        f"the signed header says {chain}{name} {signed.get(name)!r}, the bundle has {value!r}"
        for name, value in seen.items()
        if signed.get(name) != value
    ]


def _unsigned(chain: int, span: Span) -> str:
    return f"the bundle holds {span.transactions} transaction(s) of chain {chain}, which the signed header does not name"
