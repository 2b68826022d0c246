"""Checking an audit bundle in one pass (records: pokna_verify.bundle.records; what each check proves:
docs/audit.md). Memory holds the accounts, the games still open in the range and a few blocks of records
in flight, never the bundle.

pokna_verify.bundle.scan reads each line once, a game record's proof checked with it (on every core for a
large bundle), and hands the records here in order: BundleAudit.take runs every check that needs the
records before it. The scan calls this module, never the other way round: verify_bundle is there.

The ledger's own rules (chains, seqs, balance, currencies) are pokna_verify.ledger.check's; which chains
and seqs the bundle holds, with their end links, is checked here against the signed header (per chain
since format 2; a format 1 bundle, written before there were chains, is all chain 0); the money is matched
by pokna_verify.bundle.money and explained by pokna_verify.bundle.journal; the signed checkpoints are
placed by pokna_verify.bundle.checkpoints. Signatures (header, proofs, checkpoints) are checked against the
published key ring the auditor brings; without one, against the ring inside the bundle, which the report
says. A beacon-mode proof's drand rounds are checked against quicknet and any chain the auditor trusts too
(never one the bundle names: whoever holds a chain's key chooses its rounds).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pokna_verify.bundle.checkpoints import Checkpoints
from pokna_verify.bundle.journal import Journal
from pokna_verify.bundle.lines import read_line
from pokna_verify.bundle.log_records import LOG_CHECKPOINT, LOG_LEAF
from pokna_verify.bundle.play_tally import PlayTally
from pokna_verify.bundle.proofs import GameProof
from pokna_verify.bundle.public_log import PublicLog
from pokna_verify.bundle.records import (
    ACCOUNT,
    CHECKPOINT,
    COUNTED,
    END,
    FORMATS_READ,
    GAME,
    HEADER,
    KEY_RING,
    TRANSACTION,
)
from pokna_verify.bundle.report import BundleReport
from pokna_verify.bundle.span import Span, signed_chains, span_problems
from pokna_verify.crypto.errors import CryptoError
from pokna_verify.crypto.signing import signature_problem
from pokna_verify.fairness.beacon import KNOWN_CHAINS, BeaconChain
from pokna_verify.fairness.keyring import KeyRing
from pokna_verify.ledger.chain import chain_label
from pokna_verify.ledger.check import ExportAudit, is_int, shape_problem

Progress = Callable[[int, BundleReport], None]
CHECKS = (
    "header",
    "key ring",
    "ledger chain",
    "checkpoints",
    "proofs",
    "money followed the dice",
    "explained",
    "public log",
)
_PROGRESS_EVERY = 20_000


def _ring_entries(ring: KeyRing) -> list[tuple[str, str, str]]:
    return sorted((entry["key_id"], entry["public_key"], entry["status"]) for entry in ring.to_json()["keys"])


class BundleAudit:
    def __init__(
        self,
        *,
        keys: KeyRing | None = None,
        beacon_chains: Sequence[BeaconChain] = KNOWN_CHAINS,
        processes: int = 1,
        progress: Progress | None = None,
        play: PlayTally | None = None,
        previous_checkpoint: str | None = None,
    ) -> None:
        self.report = BundleReport(processes=processes, beacon_chains=tuple(beacon_chains))
        self.log = PublicLog(self.report, previous_checkpoint)
        self.play = play
        self.beacon_chains = tuple(beacon_chains)
        self.published = keys
        self.keys: KeyRing | None = keys
        self.ledger = ExportAudit(None, None)
        self.journal = Journal(self.report)
        self.proof_keys: tuple[KeyRing | None] | None = None  # fixed at the first game record
        self.ledger_taken = False  # the current block's transactions were taken in as checked by a worker
        self.processes = processes
        self.progress = progress
        self.header: dict[str, Any] | None = None
        self.header_signed = False
        self.ring_line: int | None = None
        self.format: int | None = None
        # The signed range: chain -> (from_seq, to_seq); what the bundle holds of each chain.
        self.ranges: dict[int, tuple[int, int]] = {}
        self.spans: dict[int, Span] = {}
        self.last: tuple[int, int, str] | None = None  # the last transaction's chain, seq and hash
        self.checkpoints = Checkpoints(self.report)
        self.ended = False
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
        version = record.get("format")
        # `type(...) is int`: 2.0 == 2 and signs as 2 (RFC 8785), but is no format this checker reads.
        if type(version) is not int or version not in FORMATS_READ:
            self.report.found(
                number,
                HEADER,
                None,
                f"format {version!r}; this checker reads {' and '.join(map(str, FORMATS_READ))}",
            )
        self.format = version if type(version) is int and version in FORMATS_READ else None
        tenant_id, from_seq, to_seq = record.get("tenant_id"), record.get("from_seq"), record.get("to_seq")
        self.report.tenant_id = tenant_id if isinstance(tenant_id, str) else None
        self.report.from_seq = from_seq if isinstance(from_seq, int) else None
        self.report.to_seq = to_seq if isinstance(to_seq, int) else None
        if self.format == 1:
            if isinstance(from_seq, int) and isinstance(to_seq, int):
                self.ranges[0] = (from_seq, to_seq)
        elif self.format is not None:
            self._read_chains(number, record.get("chains"))
        self.journal.chain_starts = {chain: first for chain, (first, _last) in self.ranges.items()}
        if self.keys is not None:
            self._check_header_signature()

    def _read_chains(self, number: int, chains: object) -> None:
        """Format 2's `chains`, each {chain, from_seq, to_seq, ...} ascending by chain."""
        signed = signed_chains(chains)
        if signed is None:
            self.report.found(
                number,
                HEADER,
                None,
                "the header's chains are not a list of {chain, from_seq, to_seq, ...} ascending by chain",
            )
            return
        for entry in signed:
            self.ranges[entry["chain"]] = (entry["from_seq"], entry["to_seq"])
            self.report.chains.append(entry)

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
        sound = self.journal.on_game(number, record, proof)
        game_id = record.get("game_id")
        if isinstance(game_id, str):
            self.log.on_game(number, game_id, proof.log_leaf if proof is not None else None)
        if sound and proof is not None:
            self.report.rolls += proof.rolls
            for problem in proof.problems:
                self.report.found(number, GAME, record["game_id"], f"proof check {problem}")
            if self.play is not None and proof.facts is not None:
                self.play.game(record["game_id"], proof.facts.play)

    def _on_transaction(self, number: int, record: dict[str, Any]) -> None:
        line = {key: value for key, value in record.items() if key != "type"}
        problem = None if self.ledger_taken else shape_problem(line)
        if problem is not None:
            chain = line.get("chain", 0)
            name = chain_label(chain if is_int(chain) else 0, line.get("seq"))
            self.report.found(number, TRANSACTION, name, f"not a ledger transaction: {problem}")
            return
        chain, seq, hash_ = line.get("chain", 0), line["seq"], line["hash"]
        if self.last is not None and chain < self.last[0]:
            self.report.found(
                number,
                TRANSACTION,
                chain_label(chain, seq),
                f"{chain_label(chain, seq)} comes after chain {self.last[0]}: a bundle holds its chains in ascending order",
            )
        if not self.ledger_taken:
            self.ledger.check_parsed(number, line)
        span = self.spans.get(chain)
        if span is None:
            span = self.spans[chain] = Span(seq, line["prev_hash"])
        span.last_seq, span.last_hash = seq, hash_
        span.transactions += 1
        self.last = (chain, seq, hash_)
        self.checkpoints.on_transaction(chain, seq, hash_)
        self.log.on_transaction(number, chain, seq, hash_, line["metadata"].get("game_id"))
        self.journal.on_transaction(number, line)
        if self.play is not None:
            self.play.transaction(line, self.journal.closed)

    def _on_checkpoint(self, number: int, record: dict[str, Any]) -> None:
        self.checkpoints.on_checkpoint(
            number,
            record,
            ranges=self.ranges,
            last=self.last,
            after_other_records=bool(self.journal.pending_accounts) or self.journal.pending_game is not None,
            signature_problem=self._signature_problem(record),
        )

    def _on_log_checkpoint(self, number: int, record: dict[str, Any]) -> None:
        first = self.ring_line is not None and self.last is None and not self.journal.accounts
        self.log.on_checkpoint(number, record, self.keys, self.report.tenant_id, first)

    def _on_log_leaf(self, number: int, record: dict[str, Any]) -> None:
        self.log.on_leaf(number, record, self.keys)

    def _on_end(self, number: int, record: dict[str, Any]) -> None:
        self.ended = True
        counted = record.get("records")
        # The log's records are counted by a bundle that carries them (one without keeps format 2's trailer).
        logged = (LOG_CHECKPOINT, LOG_LEAF) if self.log.present else ()
        seen = {name: self.count.get(name, 0) for name in (*COUNTED, *logged)}
        if counted != seen:
            self.report.found(number, END, None, f"the trailer counts {counted}, the bundle holds {seen}")

    _handlers: Mapping[str, Callable[[BundleAudit, int, dict[str, Any]], None]] = {
        HEADER: _on_header,
        KEY_RING: _on_key_ring,
        ACCOUNT: _on_account,
        TRANSACTION: _on_transaction,
        CHECKPOINT: _on_checkpoint,
        LOG_CHECKPOINT: _on_log_checkpoint,
        LOG_LEAF: _on_log_leaf,
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
        self.checkpoints.finish()
        self.journal.finish()
        signed_log = self.header.get("log_size") if self.header is not None and self.format == 3 else None
        self.log.finish(self.keys, self.ranges, signed_log)
        ledger = self.ledger.finish()
        for finding in ledger.findings:
            report.found(finding.line, TRANSACTION, chain_label(finding.chain, finding.seq), finding.problem)
        report.findings.dropped += ledger.findings.dropped
        report.notes += ledger.notes
        report.transactions, report.postings = ledger.transactions, ledger.postings
        report.records = dict(self.count)
        report.checks = list(CHECKS)
        return report

    def _check_span(self, header: Mapping[str, Any]) -> None:
        """The header's signed range against what the bundle holds: nothing cut off, nothing added."""
        for problem in span_problems(header, self.format, self.report.chains, self.spans):
            self.report.found(1, HEADER, None, problem)
