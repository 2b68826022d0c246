"""Checking an audit bundle in one pass (records: pokna.audit.records; what each check proves:
docs/audit.md). Memory holds the accounts, the games still open in the range and a few blocks of records
in flight, never the bundle.

Each line is read once (read_line): JSON, and for a game record its proof, parsed and checked
(pokna.audit.proofs). pokna.audit.bundle_scan does that on every core for a large bundle and hands the
records here in order; BundleAudit.take then runs every check that needs the records before it.

The ledger's own rules (chain, seqs, balance, currencies) are pokna.ledger.audit's; every proof is checked
as pokna.fairness checks it; the money is matched by pokna.audit.money and explained by
pokna.audit.journal. Signatures (header, proofs, checkpoints) are checked against the published key ring
the auditor brings; without one, against the ring inside the bundle, which the report says. A beacon-mode
proof's drand rounds are checked against quicknet and any chain the auditor trusts too (never one the
bundle names: whoever holds a chain's key chooses its rounds).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from pokna.audit.journal import Journal
from pokna.audit.proofs import GameProof, read_game_proof
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
from pokna.fairness.beacon import KNOWN_CHAINS, BeaconChain
from pokna.fairness.keyring import KeyRing
from pokna.fairness.plain_json import loads_noting_plain
from pokna.ledger.audit import ExportAudit, shape_problem

Progress = Callable[[int, BundleReport], None]
# A line as read: its number, its JSON value (None when unreadable), why it is unreadable, and for a game
# record its proof as read and checked.
ReadLine = tuple[int, Any, str | None, GameProof | None]
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
_GAME_MARK = f'"{GAME}"'
_READ_PROOF: dict[str, Any] = {}


def _ring_entries(ring: KeyRing) -> list[tuple[str, str, str]]:
    return sorted((entry["key_id"], entry["public_key"], entry["status"]) for entry in ring.to_json()["keys"])


class BundleAudit:
    def __init__(
        self,
        *,
        published_keys: KeyRing | None = None,
        beacon_chains: Sequence[BeaconChain] = KNOWN_CHAINS,
        processes: int = 1,
        progress: Progress | None = None,
    ) -> None:
        self.report = BundleReport(processes=processes, beacon_chains=tuple(beacon_chains))
        self.beacon_chains = tuple(beacon_chains)
        self.published = published_keys
        self.keys: KeyRing | None = published_keys
        self.ledger = ExportAudit(None, None)
        self.journal = Journal(self.report)
        self.proof_keys: tuple[KeyRing | None] | None = None  # fixed at the first game record
        self.ledger_taken = False  # the current block's transactions were taken in as checked by a worker
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

    def keys_for_proofs(self) -> KeyRing | None:
        """The keys every proof is checked with: those known at the first game record (the bundle's own
        ring is on line 2, before any game)."""
        if self.proof_keys is None:
            self.proof_keys = (self.keys,)
        return self.proof_keys[0]

    def feed(self, number: int, raw: str | bytes) -> None:
        line = read_line(number, raw, self.keys_for_proofs, self.beacon_chains)
        if line is not None:
            self.take(*line)

    def take(self, number: int, record: Any, unreadable: str | None, proof: GameProof | None) -> None:
        self.lines = number
        if self.progress is not None and number % _PROGRESS_EVERY == 0:
            self.progress(number, self.report)
        if unreadable is not None:
            self.report.found(number, "?", None, unreadable)
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
        if kind == GAME:
            self._on_game(number, record, proof)
            return
        handler = self._handlers.get(kind)
        if handler is None:
            self.report.found(number, kind, None, f"unknown record type {kind!r}")
            return
        handler(self, number, record)

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

    def _on_game(self, number: int, record: dict[str, Any], proof: GameProof | None) -> None:
        self.keys_for_proofs()
        if self.journal.on_game(number, record, proof) and proof is not None:
            self.report.rolls += proof.rolls
            for problem in proof.problems:
                self.report.found(number, GAME, record["game_id"], f"proof check {problem}")

    def _on_transaction(self, number: int, record: dict[str, Any]) -> None:
        line = {key: value for key, value in record.items() if key != "type"}
        problem = None if self.ledger_taken else shape_problem(line)
        if problem is not None:
            seq = line.get("seq")
            self.report.found(number, TRANSACTION, f"seq {seq}", f"not a ledger transaction: {problem}")
            return
        if self.first_prev_hash is None:
            self.first_prev_hash = line["prev_hash"]
        if not self.ledger_taken:
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
        if self.journal.pending_accounts or self.journal.pending_game is not None:
            found(
                number,
                CHECKPOINT,
                name,
                "a checkpoint after an account or game record: it belongs right after the transaction at its seq",
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

    # --- the end ----------------------------------------------------------------------------------------

    def finish(self) -> BundleReport:
        report = self.report
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


def read_line(
    number: int,
    raw: str | bytes,
    proof_keys: Callable[[], KeyRing | None],
    beacon_chains: Sequence[BeaconChain] = KNOWN_CHAINS,
) -> ReadLine | None:
    """The line read as JSON, and a game record's proof checked (its drand rounds against `beacon_chains`);
    None for a blank line. Pure: a worker process reads its lines with this too."""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    if not text.strip():
        return None
    plain = False
    try:
        if _GAME_MARK in text:  # likely a game record: note whether its proof's signed bytes need a look
            record, plain = loads_noting_plain(text)
        else:
            record = json.loads(text)
    except ValueError as error:
        return number, None, f"line {number} is not JSON: {error}", None
    proof = None
    if isinstance(record, dict) and record.get("type") == GAME:
        proof = read_game_proof(record.get("proof"), proof_keys(), plain=plain, beacon_chains=beacon_chains)
        if proof is not None:
            # Read and checked: what the journal still asks of it is only that it was an object, so the
            # proof itself is not carried (nor sent back from a worker).
            record["proof"] = _READ_PROOF
    return number, record, None, proof


def verify_bundle(
    lines: Iterable[str | bytes],
    *,
    keys: KeyRing | None = None,
    beacon_chains: Sequence[BeaconChain] = KNOWN_CHAINS,
    processes: int = 1,
    progress: Progress | None = None,
) -> BundleReport:
    """Lines of a bundle, checked here (processes=1) or on that many processes
    (pokna.audit.bundle_scan.verify_bundle_stream reads a file; this takes any lines). `beacon_chains`: every
    drand chain a beacon-mode proof may name (quicknet unless the auditor trusts more, as tests do)."""
    from pokna.audit.bundle_scan import scan_lines

    audit = BundleAudit(
        published_keys=keys, beacon_chains=beacon_chains, processes=processes, progress=progress
    )
    return scan_lines(audit, lines)
