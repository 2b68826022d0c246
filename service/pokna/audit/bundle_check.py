"""Checking an audit bundle in one pass (records: pokna.audit.records; what each check proves:
docs/audit.md). Memory holds the accounts, the games still open in the range and a few batches of proofs
in flight, never the bundle.

The ledger's own rules (chain, seqs, balance, currencies) are pokna.ledger.audit's; every proof is checked
as pokna.fairness checks it; the money is matched by pokna.audit.money and explained by
pokna.audit.journal. Signatures (header, proofs, checkpoints) are checked against the published key ring
the auditor brings; without one, against the ring inside the bundle, which the report says.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pokna.audit.journal import Journal
from pokna.audit.proofs import ProofChecker
from pokna.audit.records import (
    ACCOUNT,
    CHECKPOINT,
    COUNTED,
    END,
    FORMAT_VERSION,
    GAME,
    HEADER,
    KEY_RING,
    TRANSACTION,
)
from pokna.audit.report import BundleReport
from pokna.crypto.errors import CryptoError
from pokna.crypto.signing import signature_problem
from pokna.fairness.keyring import KeyRing
from pokna.ledger.audit import ExportAudit, shape_problem

Progress = Callable[[int, BundleReport], None]
CHECKS = (
    "header",
    "key ring",
    "ledger chain",
    "checkpoints",
    "proofs",
    "money followed the dice",
    "explained",
)
_PROGRESS_EVERY = 20_000


def _ring_entries(ring: KeyRing) -> list[tuple[str, str, str]]:
    return sorted((entry["key_id"], entry["public_key"], entry["status"]) for entry in ring.to_json()["keys"])


class BundleAudit:
    def __init__(
        self, *, published_keys: KeyRing | None = None, processes: int = 1, progress: Progress | None = None
    ) -> None:
        self.report = BundleReport(processes=processes)
        self.published = published_keys
        self.keys: KeyRing | None = published_keys
        self.ledger = ExportAudit(None, None)
        self.journal = Journal(self.report)
        self.proofs: ProofChecker | None = None
        self.processes = processes
        self.progress = progress
        self.header: dict[str, Any] | None = None
        self.header_signed = False
        self.ring_line: int | None = None
        self.first_prev_hash: str | None = None
        self.last: tuple[int, str] | None = None  # the last transaction's seq and hash
        self.ended = False
        self.last_checkpoint: tuple[int, str] | None = None
        self.count: dict[str, int] = {}
        self.lines = 0
        self.previous_kind: str | None = None  # the record type of the line before

    def feed(self, number: int, raw: str | bytes) -> None:
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        if not text.strip():
            return
        self.lines = number
        if self.progress is not None and number % _PROGRESS_EVERY == 0:
            self.progress(number, self.report)
        try:
            record = json.loads(text)
        except ValueError as error:
            self.report.found(number, "?", None, f"line {number} is not JSON: {error}")
            return
        kind = record.get("type") if isinstance(record, dict) else None
        if not isinstance(kind, str):
            self.report.found(
                number, "?", None, f"line {number} is not a typed record (an object with a type)"
            )
            return
        if self.ended:
            self.report.found(number, kind, None, "a record after the trailer")
        if number == 1 and kind != HEADER:
            self.report.found(number, kind, None, "the bundle does not open with its header")
        self.count[kind] = self.count.get(kind, 0) + 1
        handler = self._handlers.get(kind)
        if handler is None:
            self.report.found(number, kind, None, f"unknown record type {kind!r}")
            return
        handler(self, number, record)
        self.previous_kind = kind
        if self.proofs is not None:
            self._take_proofs(self.proofs.ready())

    # --- records ----------------------------------------------------------------------------------------

    def _on_header(self, number: int, record: dict[str, Any]) -> None:
        if number != 1 or self.header is not None:
            self.report.found(number, HEADER, None, "the header appears again, or not on the first line")
            return
        self.header = record
        if record.get("format") != FORMAT_VERSION:
            self.report.found(number, HEADER, None, f"format {record.get('format')!r}; this checker reads 1")
        tenant_id, from_seq, to_seq = record.get("tenant_id"), record.get("from_seq"), record.get("to_seq")
        self.report.tenant_id = tenant_id if isinstance(tenant_id, str) else None
        self.report.from_seq = from_seq if isinstance(from_seq, int) else None
        self.report.to_seq = to_seq if isinstance(to_seq, int) else None
        self.journal.from_seq = self.report.from_seq
        if self.keys is not None:
            self._check_header_signature()

    def _on_key_ring(self, number: int, record: dict[str, Any]) -> None:
        if self.ring_line is not None or number != 2:
            self.report.found(
                number, KEY_RING, None, "the key ring appears again, or not right after the header"
            )
            return
        self.ring_line = number
        try:
            ring = KeyRing.from_json(record)
        except (CryptoError, ValueError) as error:
            self.report.found(number, KEY_RING, None, f"the key ring cannot be read: {error}")
            return
        if self.published is None:
            self.keys = ring
            self.report.notes.append(
                "signatures were checked against the key ring inside the bundle: whoever wrote the bundle "
                "chose it; give the published keys (--keys) to check them against the operator's"
            )
            self._check_header_signature()
        elif _ring_entries(ring) != _ring_entries(self.published):
            self.report.found(number, KEY_RING, None, "the bundle's key ring differs from the published one")

    def _on_account(self, number: int, record: dict[str, Any]) -> None:
        self.journal.on_account(number, record)

    def _on_game(self, number: int, record: dict[str, Any]) -> None:
        if self.proofs is None:
            self.proofs = ProofChecker(self.keys, self.processes)
        self.journal.on_game(number, record, self.proofs)

    def _on_transaction(self, number: int, record: dict[str, Any]) -> None:
        line = {key: value for key, value in record.items() if key != "type"}
        problem = shape_problem(line)
        if problem is not None:
            seq = line.get("seq")
            self.report.found(number, TRANSACTION, f"seq {seq}", f"not a ledger transaction: {problem}")
            return
        if self.first_prev_hash is None:
            self.first_prev_hash = line["prev_hash"]
        self.ledger.check_parsed(number, line)
        self.last = (line["seq"], line["hash"])
        self.journal.on_transaction(number, line)

    def _on_checkpoint(self, number: int, record: dict[str, Any]) -> None:
        seq, name = record.get("seq"), f"seq {record.get('seq')}"
        found = self.report.found
        if record.get("tenant_id") != self.report.tenant_id:
            found(
                number, CHECKPOINT, name, f"signed for tenant {record.get('tenant_id')!r}, not the bundle's"
            )
        if self.previous_kind not in (TRANSACTION, CHECKPOINT):
            found(
                number, CHECKPOINT, name, "a checkpoint follows its transaction at once, not another record"
            )
        if self.last is None or seq != self.last[0]:
            after = "the start" if self.last is None else f"seq {self.last[0]}"
            found(number, CHECKPOINT, name, f"a checkpoint of {name} placed after {after}, not after its seq")
        elif record.get("hash") != self.last[1]:
            found(
                number,
                CHECKPOINT,
                name,
                f"{name}: the hash differs from the signed checkpoint (history rewritten)",
            )
        problem = self._signature_problem(record)
        if problem is not None:
            found(number, CHECKPOINT, name, f"checkpoint signature: {problem}")
        order = (seq if isinstance(seq, int) else -1, str(record.get("created_at")))
        if self.last_checkpoint is not None and order < self.last_checkpoint:
            found(number, CHECKPOINT, name, "checkpoints come oldest first")
        self.last_checkpoint = order

    def _on_end(self, number: int, record: dict[str, Any]) -> None:
        self.ended = True
        counted = record.get("records")
        seen = {name: self.count.get(name, 0) for name in COUNTED}
        if counted != seen:
            self.report.found(number, END, None, f"the trailer counts {counted}, the bundle holds {seen}")

    _handlers: Mapping[str, Callable[[BundleAudit, int, dict[str, Any]], None]] = {
        HEADER: _on_header,
        KEY_RING: _on_key_ring,
        ACCOUNT: _on_account,
        GAME: _on_game,
        TRANSACTION: _on_transaction,
        CHECKPOINT: _on_checkpoint,
        END: _on_end,
    }

    # --- signatures and proofs --------------------------------------------------------------------------

    def _signature_problem(self, document: Mapping[str, Any]) -> str | None:
        if self.keys is None:
            return "no key ring to check it with"
        key = self.keys.find(str(document.get("key_id")))
        if key is None:
            return f"key_id {document.get('key_id')!r} is not in the key ring"
        return signature_problem(document, key.public_key)

    def _check_header_signature(self) -> None:
        if self.header is None or self.header_signed:
            return
        self.header_signed = True
        problem = self._signature_problem(self.header)
        if problem is not None:
            self.report.found(1, HEADER, None, f"header signature: {problem}")

    def _take_proofs(self, verdicts: Iterable[Any]) -> None:
        for verdict in verdicts:
            self.report.rolls += verdict.rolls
            for problem in verdict.problems:
                self.report.found(verdict.line, GAME, verdict.game_id, f"proof check {problem}")

    # --- the end ----------------------------------------------------------------------------------------

    def finish(self) -> BundleReport:
        report = self.report
        if self.proofs is not None:
            self._take_proofs(self.proofs.finish())
        if self.header is None:
            report.found(1, HEADER, None, "the bundle has no header")
        else:
            self._check_header_signature()
            self._check_span(self.header)
        if self.ring_line is None:
            report.found(2, KEY_RING, None, "the bundle has no key ring (it belongs on line 2)")
        if not self.ended:
            report.found(self.lines or None, END, None, "the bundle has no trailer: it was cut short")
        self.journal.finish()
        ledger = self.ledger.finish()
        for finding in ledger.findings:
            report.found(finding.line, TRANSACTION, f"seq {finding.seq}", finding.problem)
        report.notes += ledger.notes
        report.transactions, report.postings = ledger.transactions, ledger.postings
        report.records = dict(self.count)
        report.checks = list(CHECKS)
        return report

    def _check_span(self, header: Mapping[str, Any]) -> None:
        """The header's signed range against what the bundle holds: nothing cut off, nothing added."""
        ledger = self.ledger.report
        seen = {
            "from_seq": ledger.first_seq if ledger.first_seq is not None else header.get("from_seq"),
            "to_seq": ledger.last_seq if ledger.last_seq is not None else header.get("to_seq"),
            "first_prev_hash": self.first_prev_hash or header.get("first_prev_hash"),
            "last_hash": ledger.head_hash or header.get("last_hash"),
            "transactions": ledger.transactions,
        }
        for name, value in seen.items():
            if header.get(name) != value:
                self.report.found(
                    1,
                    HEADER,
                    None,
                    f"the signed header says {name} {header.get(name)!r}, the bundle has {value!r}",
                )


def verify_bundle(
    lines: Iterable[str | bytes],
    *,
    keys: KeyRing | None = None,
    processes: int = 1,
    progress: Progress | None = None,
) -> BundleReport:
    audit = BundleAudit(published_keys=keys, processes=processes, progress=progress)
    try:
        for number, raw in enumerate(lines, start=1):
            audit.feed(number, raw)
        return audit.finish()
    finally:
        if audit.proofs is not None:
            audit.proofs.close()
