"""What an audit bundle reads of the books: the span of the journal a range covers, with its two end links,
the signed checkpoints inside it, and how many of a game's transfers came before it.

A range is given by seq or by time, never both for the same end; either end may be left open. Times are
turned into seqs here (the first transaction written at or after `from_time`, the last at or before
`to_time`), so a bundle is always a run of consecutive seqs whatever it was asked by.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session

from pokna.errors import InvalidRequest
from pokna.ledger import books_repository, repository
from pokna.ledger.chain import GENESIS_HASH
from pokna.ledger.checkpoint import Checkpoint
from pokna.ledger.errors import TenantNotFound


@dataclass(frozen=True)
class JournalSpan:
    """Seqs `first_seq`..`last_seq` (empty when first > last), the prev_hash the first continues from and
    the hash of the last: the two links a signed bundle header pins."""

    first_seq: int
    last_seq: int
    first_prev_hash: str
    last_hash: str

    @property
    def empty(self) -> bool:
        return self.first_seq > self.last_seq

    @property
    def transactions(self) -> int:
        return max(self.last_seq - self.first_seq + 1, 0)


def journal_span(
    session: Session,
    tenant_id: str,
    *,
    from_seq: int | None = None,
    to_seq: int | None = None,
    from_time: datetime | None = None,
    to_time: datetime | None = None,
) -> JournalSpan:
    """The asked-for range cut at the chain head as it is now. Raises InvalidRequest naming the field
    (`query.from_seq`, ...) for a range that contradicts itself, TenantNotFound for an unknown tenant."""
    if not repository.tenant_exists(session, tenant_id):
        raise TenantNotFound(f"no tenant {tenant_id}", tenant_id=tenant_id)
    for name, value in (("from_seq", from_seq), ("to_seq", to_seq)):
        if value is not None and value < 1:
            raise InvalidRequest(f"{name} is a seq, 1 or more; not {value}", field=f"query.{name}")
    for name, moment in (("from_time", from_time), ("to_time", to_time)):
        if moment is not None and moment.tzinfo is None:
            raise InvalidRequest(f"{name} needs a time zone (e.g. Z)", field=f"query.{name}")
    if from_seq is not None and from_time is not None:
        raise InvalidRequest("give from_seq or from_time, not both", field="query.from_time")
    if to_seq is not None and to_time is not None:
        raise InvalidRequest("give to_seq or to_time, not both", field="query.to_time")
    if from_seq is not None and to_seq is not None and from_seq > to_seq:
        raise InvalidRequest(f"to_seq {to_seq} is before from_seq {from_seq}", field="query.to_seq")
    if from_time is not None and to_time is not None and from_time > to_time:
        raise InvalidRequest("to_time is before from_time", field="query.to_time")
    first_by_time, last_by_time = books_repository.seq_bounds_of_times(session, tenant_id, from_time, to_time)
    if from_time is not None:
        # Nothing written since from_time: a range that starts after the head, and is empty.
        from_seq = first_by_time if first_by_time is not None else _head_seq(session, tenant_id) + 1
    if to_time is not None:
        to_seq = last_by_time if last_by_time is not None else 0
    seqs = books_repository.seq_range(session, tenant_id, from_seq, to_seq)
    if seqs.empty:
        return JournalSpan(seqs.first, seqs.last, GENESIS_HASH, GENESIS_HASH)
    first_prev_hash, last_hash = books_repository.link_hashes(session, tenant_id, seqs)
    return JournalSpan(seqs.first, seqs.last, first_prev_hash, last_hash)


def _head_seq(session: Session, tenant_id: str) -> int:
    seq, _hash = repository.read_head(session, tenant_id)
    return seq


def checkpoints_between(session: Session, tenant_id: str, first_seq: int, last_seq: int) -> list[Checkpoint]:
    """Every checkpoint signed at a seq in first_seq..last_seq, oldest first."""
    return [
        Checkpoint(
            id=row.id,
            tenant_id=row.tenant_id,
            seq=int(row.seq),
            hash=row.hash,
            created_at=row.created_at,
            key_id=row.key_id,
            signature=row.signature,
        )
        for row in repository.checkpoints_between(session, tenant_id, first_seq, last_seq)
    ]


def transfers_before(
    session: Session, tenant_id: str, game_ids: Sequence[str], before_seq: int
) -> dict[str, int]:
    """How many of each game's transactions (they carry the game's id as reference) precede `before_seq`."""
    if before_seq <= 1 or not game_ids:
        return {}
    return books_repository.references_before(session, tenant_id, list(game_ids), before_seq)
