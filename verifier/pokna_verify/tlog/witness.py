"""A witness's judgement: is the checkpoint a log serves now the same history as the one kept before?

A log that shows two parties two histories (a fork), or hides what it once showed (a rollback), signs two
checkpoints that no consistency proof can join. Whoever keeps the last checkpoint they saw and checks each
new one against it catches that; so does anyone comparing the checkpoints two witnesses kept. Pokna's
checkpoints also carry the ledger's chain heads, and the books only grow too: a head that went back is a
rollback of the books, caught the same way. The log signs one checkpoint per size, so two of one size
whose ledger lines differ (even ahead) are two statements of the books for one tree: a fork too.
"""

from __future__ import annotations

import hmac
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from pokna_verify.tlog.checkpoint import Checkpoint
from pokna_verify.tlog.errors import LogError, ProofError
from pokna_verify.tlog.verify import verify_consistency


class Judgement(StrEnum):
    FIRST = "first"  # nothing kept before: this one is kept
    SAME = "same"  # the very checkpoint kept before
    EXTENDED = "extended"  # a later tree of the same history
    ROLLBACK = "rollback"  # fewer games (or books that went back) than seen before
    FORK = "fork"  # a different history than seen before

    @property
    def consistent(self) -> bool:
        return self in (Judgement.FIRST, Judgement.SAME, Judgement.EXTENDED)


@dataclass(frozen=True)
class Witnessed:
    judgement: Judgement
    detail: str


def needs_consistency_proof(kept: Checkpoint | None, latest: Checkpoint) -> bool:
    return kept is not None and 0 < kept.size < latest.size


def judge(kept: Checkpoint | None, latest: Checkpoint, consistency_path: Sequence[bytes] = ()) -> Witnessed:
    """`consistency_path`: the log's proof from `kept.size` to `latest.size` (needs_consistency_proof)."""
    if kept is None:
        return Witnessed(Judgement.FIRST, f"first checkpoint of {latest.origin}: {latest.size} games")
    if kept.origin != latest.origin:
        raise LogError(f"the kept checkpoint is of {kept.origin}, not of {latest.origin}")
    if latest.size < kept.size:
        return Witnessed(
            Judgement.ROLLBACK,
            f"{latest.origin} now shows {latest.size} games after showing {kept.size}: a log only grows",
        )
    books = _books_went_back(kept, latest)
    if books is not None:
        return Witnessed(Judgement.ROLLBACK, books)
    if latest.size == kept.size:
        if hmac.compare_digest(latest.root_hash, kept.root_hash):
            if latest.extensions != kept.extensions:  # one checkpoint a size: a second is a split view
                return Witnessed(
                    Judgement.FORK,
                    f"{latest.origin} signed two checkpoints of {latest.size} games whose extension (ledger) "
                    "lines differ: two statements of the books that go with one tree",
                )
            return Witnessed(Judgement.SAME, f"{latest.origin}: still {latest.size} games, the same root")
        return Witnessed(
            Judgement.FORK, f"{latest.origin} shows two different trees of {latest.size} games: a fork"
        )
    if kept.size == 0:  # the empty tree is a prefix of every tree (RFC 9162 §2.1.4: nothing to prove)
        return Witnessed(Judgement.EXTENDED, f"{latest.origin}: 0 -> {latest.size} games, the same history")
    try:
        verify_consistency(kept.size, latest.size, kept.root_hash, latest.root_hash, consistency_path)
    except ProofError as error:
        return Witnessed(
            Judgement.FORK,
            f"{latest.origin}'s tree of {latest.size} games does not extend the one of {kept.size} kept "
            f"before ({error}): a fork",
        )
    return Witnessed(
        Judgement.EXTENDED, f"{latest.origin}: {kept.size} -> {latest.size} games, the same history"
    )


def _books_went_back(kept: Checkpoint, latest: Checkpoint) -> str | None:
    now = latest.ledger_heads
    for chain, (seq, hash_) in sorted(kept.ledger_heads.items()):
        later_seq, later_hash = now.get(chain, (0, ""))
        if later_seq < seq:
            return f"ledger chain {chain} is back at seq {later_seq} after {seq}: the books went back"
        if later_seq == seq and later_hash != hash_:
            return f"ledger chain {chain} has two different entries {seq}: the books were rewritten"
    return None
