"""What an audit bundle reads of the books: the span of each hash chain a range covers, with its two end
links, the signed checkpoints that pin a transaction inside it, and how many of a game's transfers came
before it.

A range is one chain's (`chain`), or every chain's; seqs are positions on one chain and need `chain`
(books_repository.check_seq_bounds). Its ends are given by seq or by time, never both for the same end;
either end may be left open. Times are turned into seqs here per chain (the first transaction written at
or after `from_time`, the last at or before `to_time`), so a bundle is always, per chain, a run of
consecutive seqs whatever it was asked by.

Each statement on an autocommit connection sees its own snapshot, and names the tenant, so on Citus it
reaches one shard.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from psycopg import AsyncConnection

from pokna.errors import InvalidRequest
from pokna.ledger import books_repository
from pokna.ledger.books_repository import SeqRange
from pokna.ledger.checkpoint import Checkpoint
from pokna.ledger.errors import TenantNotFound
from pokna.ledger.export_aio import check_chain, first_created_at, head_seqs
from pokna.ledger.reads import checkpoints_of
from pokna_verify.invariant import present
from pokna_verify.ledger.chain import GENESIS_HASH

# How far a checkpoint's created_at may trail a transaction it pins (both are the service's clock, read on
# possibly different hosts): the database query's margin; the pins themselves are checked exactly.
_CLOCK_MARGIN = timedelta(minutes=5)


@dataclass(frozen=True)
class JournalRange:
    """What a bundle is asked for: by seq or by time; either end may stay open (the start of the books, the
    chain head now). `chain`: that chain only; seqs need it; with neither, every chain."""

    from_seq: int | None = None
    to_seq: int | None = None
    from_time: datetime | None = None
    to_time: datetime | None = None
    chain: int | None = None

    @property
    def whole_books(self) -> bool:
        return self.chain is None and not any(
            end is not None for end in (self.from_seq, self.to_seq, self.from_time, self.to_time)
        )


@dataclass(frozen=True)
class JournalSpan:
    """Seqs `first_seq`..`last_seq` of chain `chain` (empty when first > last), the prev_hash the first
    continues from and the hash of the last: the two links a signed bundle header pins."""

    first_seq: int
    last_seq: int
    first_prev_hash: str
    last_hash: str
    chain: int = 0

    @property
    def empty(self) -> bool:
        return self.first_seq > self.last_seq

    @property
    def transactions(self) -> int:
        return max(self.last_seq - self.first_seq + 1, 0)

    @property
    def seqs(self) -> SeqRange:
        return SeqRange(self.first_seq, self.last_seq, self.chain)


@dataclass(frozen=True)
class JournalSpans:
    """The chains a bundle covers: `chains`, every one with a transaction in the range, ascending by chain;
    `zero`, chain 0's span (empty too) when chain 0 is one the range asked for, else None."""

    chains: list[JournalSpan]
    zero: JournalSpan | None

    @property
    def transactions(self) -> int:
        return sum(span.transactions for span in self.chains)

    @property
    def empty(self) -> bool:
        return not self.chains

    def ranges(self) -> list[SeqRange]:
        return [span.seqs for span in self.chains]

    def of_chain(self, chain: int) -> JournalSpan | None:
        return next((span for span in self.chains if span.chain == chain), None)


_TENANT = "SELECT 1 FROM tenant WHERE id = %(tenant_id)s"
_FIRST_SEQ_SINCE = """
    SELECT chain, min(seq) FROM journal_transaction
    WHERE tenant_id = %(tenant_id)s AND created_at >= %(moment)s GROUP BY chain
"""
_LAST_SEQ_UNTIL = """
    SELECT chain, max(seq) FROM journal_transaction
    WHERE tenant_id = %(tenant_id)s AND created_at <= %(moment)s GROUP BY chain
"""
_LINK_HASHES = """
    SELECT
        (SELECT prev_hash FROM journal_transaction
         WHERE tenant_id = %(tenant_id)s AND chain = %(chain)s AND seq = %(first)s),
        (SELECT hash FROM journal_transaction
         WHERE tenant_id = %(tenant_id)s AND chain = %(chain)s AND seq = %(last)s)
"""
_CHECKPOINTS = """
    SELECT id, tenant_id, seq, hash, created_at, key_id, signature, heads FROM ledger_checkpoint
    WHERE tenant_id = %(tenant_id)s
        AND (seq BETWEEN %(first)s AND %(last)s OR (heads IS NOT NULL AND created_at >= %(since)s))
    ORDER BY created_at, seq
"""
_REFERENCES = """
    SELECT reference, count(*) FROM journal_transaction
    WHERE tenant_id = %(tenant_id)s AND reference = ANY(%(references)s) AND chain = %(chain)s
        AND seq < %(before)s
    GROUP BY reference
"""
_NO_SEQ = 2**63 - 1  # bigint's largest: a bound that leaves nothing out


def check_range(asked: JournalRange) -> None:
    """Refuse a range that contradicts itself (InvalidRequest naming the field: `query.from_seq`, ...)."""
    check_chain(asked.chain)
    for name, value in (("from_seq", asked.from_seq), ("to_seq", asked.to_seq)):
        if value is not None and value < 1:
            raise InvalidRequest(f"{name} is a seq, 1 or more; not {value}", field=f"query.{name}")
    for name, moment in (("from_time", asked.from_time), ("to_time", asked.to_time)):
        if moment is not None and moment.tzinfo is None:
            raise InvalidRequest(f"{name} needs a time zone (e.g. Z)", field=f"query.{name}")
    if asked.from_seq is not None and asked.from_time is not None:
        raise InvalidRequest("give from_seq or from_time, not both", field="query.from_time")
    if asked.to_seq is not None and asked.to_time is not None:
        raise InvalidRequest("give to_seq or to_time, not both", field="query.to_time")
    if asked.from_seq is not None and asked.to_seq is not None and asked.from_seq > asked.to_seq:
        raise InvalidRequest(
            f"to_seq {asked.to_seq} is before from_seq {asked.from_seq}", field="query.to_seq"
        )
    if asked.from_time is not None and asked.to_time is not None and asked.from_time > asked.to_time:
        raise InvalidRequest("to_time is before from_time", field="query.to_time")
    books_repository.check_seq_bounds(asked.chain, asked.from_seq, asked.to_seq)


async def journal_span(connection: AsyncConnection[Any], tenant_id: str, asked: JournalRange) -> JournalSpans:
    """The asked-for range cut at each chain's head as it is now. Raises InvalidRequest naming the field
    for a range that contradicts itself (check_range), TenantNotFound for an unknown tenant."""
    check_range(asked)
    if await (await connection.execute(_TENANT, {"tenant_id": tenant_id})).fetchone() is None:
        raise TenantNotFound(f"no tenant {tenant_id}", tenant_id=tenant_id)
    heads = await head_seqs(connection, tenant_id)
    chains = books_repository.selected_chains(asked.chain, asked.from_seq, asked.to_seq, heads)
    first_by_time = await _seq_by_chain(connection, _FIRST_SEQ_SINCE, tenant_id, asked.from_time)
    last_by_time = await _seq_by_chain(connection, _LAST_SEQ_UNTIL, tenant_id, asked.to_time)
    spans: list[JournalSpan] = []
    zero = None
    for on in chains:
        first, last = asked.from_seq, asked.to_seq
        if asked.from_time is not None:
            # Nothing written on the chain since from_time: a range that starts after its head, and is empty.
            first = first_by_time.get(on, heads.get(on, 0) + 1)
        if asked.to_time is not None:
            last = last_by_time.get(on, 0)
        (seqs,) = books_repository.seq_ranges(heads, [on], first, last)
        if seqs.empty:
            span = JournalSpan(seqs.first, seqs.last, GENESIS_HASH, GENESIS_HASH, on)
        else:
            values = {"tenant_id": tenant_id, "chain": on, "first": seqs.first, "last": seqs.last}
            found = await (await connection.execute(_LINK_HASHES, values)).fetchone()
            first_prev_hash, last_hash = present(found, "one row of two subqueries")
            span = JournalSpan(seqs.first, seqs.last, str(first_prev_hash), str(last_hash), on)
            spans.append(span)
        if on == 0:
            zero = span
    return JournalSpans(spans, zero)


async def checkpoints_between(
    connection: AsyncConnection[Any], tenant_id: str, spans: JournalSpans
) -> list[Checkpoint]:
    """Every checkpoint that may pin a transaction of the spans (chain 0's seq in chain 0's span, or, for
    one listing every chain's head, any of them), oldest first: those listing every chain's head only if
    signed at or after the spans' first transaction was written (less a clock margin), as none signed
    before can pin a seq in them. Which of them pins one, and where it goes in the bundle, is
    pokna_verify.bundle.records.checkpoint_place's to say."""
    if spans.empty:
        return []
    zero = spans.of_chain(0)
    since = await first_created_at(
        connection, tenant_id, [SeqRange(span.first_seq, span.first_seq, span.chain) for span in spans.chains]
    )
    values = {
        "tenant_id": tenant_id,
        "first": zero.first_seq if zero is not None else 1,
        "last": zero.last_seq if zero is not None else 0,
        "since": since - _CLOCK_MARGIN if since is not None else None,
    }
    return checkpoints_of(await (await connection.execute(_CHECKPOINTS, values)).fetchall())


async def transfers_before(
    connection: AsyncConnection[Any], tenant_id: str, game_chains: Mapping[str, int], spans: JournalSpans
) -> dict[str, int]:
    """How many of each game's transactions (they carry the game's id as reference) precede its first in
    the bundle: those on the game's chain (`game_chains`: the chain its transactions in the bundle are on)
    before the span's first seq, and, for a game whose chain is not chain 0, any it has on chain 0. A game
    in play when the journal got its chains (migration 0014) has its first transfers on chain 0, where
    everything was before, and the rest on its own chain: all of the former come before all of the latter,
    and a bundle that holds its chain-0 part sees the game first on chain 0 (issue 37, item 7)."""
    by_chain: dict[int, list[str]] = {}
    for game_id, chain in game_chains.items():
        by_chain.setdefault(chain, []).append(game_id)
    counts: dict[str, int] = {}
    for chain, game_ids in sorted(by_chain.items()):
        span = spans.of_chain(chain)
        if span is None or span.first_seq <= 1:
            continue
        counts |= await _references(connection, tenant_id, sorted(game_ids), chain, span.first_seq)
    moved = sorted(game_id for game_id, chain in game_chains.items() if chain != 0)
    if moved:
        for game_id, before in (await _references(connection, tenant_id, moved, 0, _NO_SEQ)).items():
            counts[game_id] = counts.get(game_id, 0) + before
    return counts


async def _references(
    connection: AsyncConnection[Any], tenant_id: str, references: list[str], chain: int, before: int
) -> dict[str, int]:
    values = {"tenant_id": tenant_id, "references": references, "chain": chain, "before": before}
    rows = await (await connection.execute(_REFERENCES, values)).fetchall()
    return {str(reference): int(count) for reference, count in rows}


async def _seq_by_chain(
    connection: AsyncConnection[Any], statement: str, tenant_id: str, moment: datetime | None
) -> dict[int, int]:
    if moment is None:
        return {}
    rows = await (await connection.execute(statement, {"tenant_id": tenant_id, "moment": moment})).fetchall()
    return {int(chain): int(seq) for chain, seq in rows}
