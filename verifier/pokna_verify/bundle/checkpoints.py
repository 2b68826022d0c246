"""The signed checkpoints a bundle holds (docs/audit.md): where each belongs and what it pins. Each comes right
after the transaction of the first head it pins inside the signed range (in chain order), with that
transaction's hash; every other head it pins inside the range is checked when its transaction comes (the
chains come in ascending order), and one the bundle never holds is a finding at the end. Which key signed it
is the caller's to say (pokna_verify.bundle.check.BundleAudit holds the key ring)."""

from __future__ import annotations

from typing import Any

from pokna_verify.bundle.records import CHECKPOINT, checkpoint_pins, checkpoint_place
from pokna_verify.bundle.report import BundleReport
from pokna_verify.ledger.chain import chain_label


class Checkpoints:
    def __init__(self, report: BundleReport) -> None:
        self.report = report
        # Heads a checkpoint pins further on in the bundle: (chain, seq) -> (its line, hash, name).
        self.pinned: dict[tuple[int, int], list[tuple[int, str, str]]] = {}
        self.last: tuple[int, int, str] | None = None  # the last checkpoint's chain, seq and time

    def on_checkpoint(
        self,
        number: int,
        record: dict[str, Any],
        *,
        ranges: dict[int, tuple[int, int]],
        last: tuple[int, int, str] | None,
        after_other_records: bool,
        signature_problem: str | None,
    ) -> None:
        """`ranges`: the signed range of each chain; `last`: the last transaction's chain, seq and hash;
        `after_other_records`: an account or game record came since that transaction."""
        seq = record.get("seq")
        pins = checkpoint_pins(record)
        place = checkpoint_place(pins, ranges) if pins is not None else None
        target = place if place is not None else (0, seq if isinstance(seq, int) else -1)
        name = chain_label(target[0], seq if place is None else target[1])

        def said(problem: str) -> None:
            self.report.found(number, CHECKPOINT, name, problem)

        if record.get("tenant_id") != self.report.tenant_id:
            said(f"signed for tenant {record.get('tenant_id')!r}, not the bundle's")
        if pins is None:
            said(
                "not a checkpoint: seq and hash, and heads as [{chain, seq, hash}] ascending by chain "
                "with chain 0's equal to them"
            )
        if last is None or target != last[:2]:
            after = "the start" if last is None else chain_label(*last[:2])
            said(f"a checkpoint of {name} placed after {after}, not after its seq")
        elif pins is not None and (target[0], target[1], last[2]) not in pins:
            said(f"{name}: the hash differs from the signed checkpoint (history rewritten)")
        elif pins is not None:
            for chain, pinned_seq, pinned_hash in pins:
                span = ranges.get(chain)
                if chain > target[0] and span is not None and span[0] <= pinned_seq <= span[1]:
                    self.pinned.setdefault((chain, pinned_seq), []).append((number, pinned_hash, name))
        if after_other_records:
            said(
                "a checkpoint after an account or game record: it belongs right after the transaction at its seq"
            )
        if signature_problem is not None:
            said(f"checkpoint signature: {signature_problem}")
        order = (target[0], target[1], str(record.get("created_at")))
        if self.last is not None and order < self.last:
            said("checkpoints come oldest first")
        self.last = order

    def on_transaction(self, chain: int, seq: int, hash_: str) -> None:
        for pinned_on, pinned_hash, name in self.pinned.pop((chain, seq), ()):
            if pinned_hash != hash_:
                self.report.found(
                    pinned_on,
                    CHECKPOINT,
                    name,
                    f"{chain_label(chain, seq)}: the hash differs from the signed checkpoint (history rewritten)",
                )

    def finish(self) -> None:
        for (chain, seq), pins in sorted(self.pinned.items()):
            for pinned_on, _hash, name in pins:
                self.report.found(
                    pinned_on,
                    CHECKPOINT,
                    name,
                    f"it pins {chain_label(chain, seq)}, which the bundle does not hold",
                )
