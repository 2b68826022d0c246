"""The bundle against the tenant's public log (docs/audit.md, "The public log"): completeness both ways.

The bundle carries the log's signed checkpoint (right after the key ring) and every leaf up to its size
(after the journal). The leaves are hashed as they come, into the RFC 9162 root, which must be the signed
one: a leaf changed, dropped or added does not rebuild it. Each finished game of the bundle rebuilds its
own leaf from its proof (pokna_verify.tlog.game_leaf); then

- a leaf whose game the bundle does not hold is a game left out of the books shown (the bundle must start
  at the start of the books for this to be asked: the writer carries the log only then);
- a finished game of the bundle whose last transfer is at or before the checkpoint's ledger head on its
  chain ended before the sequencer's pass that signed it, so it must be a leaf: one that is not was kept
  out of the log;
- a leaf whose game the bundle holds with another proof, status or pot is a finding too;
- the checkpoint's ledger heads must be the bundle's transactions at those seqs (the books the log pins);
- a consistency proof from an earlier checkpoint (the previous bundle's, carried or given by the auditor)
  must join it to this one: otherwise the log forked between two bundles.

Memory: a leaf hash and a place per game, and the log's frontier (log n hashes), never the leaves.
"""

from __future__ import annotations

import base64
import binascii
import hmac
from collections.abc import Sequence
from typing import Any

from pokna_verify.bounded_input import InputLimitError, loads, on_line
from pokna_verify.bundle.log_records import (
    LOG_CHECKPOINT,
    LOG_FORMAT,
    LOG_LEAF,
    NO_LOG,
    game_log_leaf,
    open_checkpoint,
)
from pokna_verify.bundle.proofs import read_game_proof
from pokna_verify.bundle.report import BundleReport
from pokna_verify.fairness.keyring import KeyRing
from pokna_verify.ledger.chain import chain_label
from pokna_verify.tlog.checkpoint import Checkpoint
from pokna_verify.tlog.errors import LogError
from pokna_verify.tlog.hashing import EMPTY_TREE_HASH, leaf_hash, node_hash
from pokna_verify.tlog.verify import verify_consistency


class PublicLog:
    def __init__(self, report: BundleReport, previous: str | None = None) -> None:
        self.report = report
        self.previous_given = previous  # the auditor's checkpoint of the previous bundle, as a note
        self.line: int | None = None
        self.checkpoint: Checkpoint | None = None
        self.record: dict[str, Any] | None = None
        self.leaves = 0
        self.leaf_line: int | None = None
        self.frontier: list[tuple[int, bytes]] = []  # (level, hash) of the complete subtrees so far
        self.logged: dict[str, tuple[int, int, bytes]] = {}  # game -> (leaf index, line, leaf hash)
        self.games: dict[str, bytes | None] = {}  # every game of the bundle -> its rebuilt leaf hash
        self.game_lines: dict[str, int] = {}
        self.last_transfer: dict[str, tuple[int, int]] = {}  # finished game -> its last transfer's place
        self.head_hashes: dict[int, str] = {}  # chain -> the hash at the checkpoint's head seq, when held
        self.heads: dict[int, tuple[int, str]] = {}  # the checkpoint's ledger heads, parsed once

    @property
    def present(self) -> bool:
        return self.line is not None

    def _checkpoint_problem(self, line: int | None, problem: str) -> None:
        self.report.found(line, LOG_CHECKPOINT, None, problem)

    # --- records ----------------------------------------------------------------------------------------

    def on_checkpoint(
        self, number: int, record: dict[str, Any], ring: KeyRing | None, tenant_id: object, first: bool
    ) -> None:
        if self.line is not None:
            self._checkpoint_problem(number, "the log checkpoint appears twice")
            return
        self.line = number
        if not first:
            self._checkpoint_problem(number, "the log checkpoint belongs right after the key ring")
        if record.get("format") != LOG_FORMAT or type(record.get("format")) is not int:
            self._checkpoint_problem(
                number, f"log record format {record.get('format')!r}; this checker reads 1"
            )
            return
        note = record.get("checkpoint")
        if not isinstance(note, str) or ring is None:
            self._checkpoint_problem(number, "no signed checkpoint text, or no key ring to check it with")
            return
        try:
            checkpoint = open_checkpoint(note, ring)
        except LogError as error:
            self._checkpoint_problem(number, f"the log checkpoint: {error}")
            return
        if not checkpoint.origin.endswith(f"/{tenant_id}"):
            self._checkpoint_problem(number, f"the log {checkpoint.origin} is not tenant {tenant_id}'s")
        self.checkpoint, self.record, self.heads = checkpoint, record, checkpoint.ledger_heads

    def on_game(self, number: int, game_id: str, rebuilt: bytes | None) -> None:
        """`rebuilt`: the leaf hash the game's record makes (game_log_leaf), None if it is not finished."""
        if not self.present:
            return
        self._before_leaves(number, "game")
        self.game_lines[game_id] = number
        self.games[game_id] = rebuilt

    def _before_leaves(self, number: int, record: str) -> None:
        """The leaves come after the journal: a leaf's game is then known to be in the books or not."""
        if self.leaves:
            self.report.found(number, record, None, "a journal record after the log's leaves")

    def on_transaction(self, number: int, chain: int, seq: int, hash_: str, game_id: object) -> None:
        if self.checkpoint is None:
            return
        self._before_leaves(number, "transaction")
        head = self.heads.get(chain)
        if head is not None and head[0] == seq:
            self.head_hashes[chain] = hash_
        if isinstance(game_id, str) and self.games.get(game_id) is not None:
            self.last_transfer[game_id] = (chain, seq)

    def on_leaf(self, number: int, record: dict[str, Any], ring: KeyRing | None) -> None:
        found = self.report.found
        index, entry = record.get("index"), record.get("entry")
        self.leaf_line = self.leaf_line or number
        if index != self.leaves or type(index) is not int or not isinstance(entry, str):
            found(
                number,
                LOG_LEAF,
                None,
                f"leaf {index!r} out of order (leaf {self.leaves} was next) or no entry",
            )
            return
        hashed = leaf_hash(entry.encode())
        self._append(hashed)
        self.leaves += 1
        try:
            game_id = _game_of(entry)
        except InputLimitError as error:  # JSON inside the line's JSON: its limits are the line's
            raise on_line(number, error) from None
        if game_id is None:
            found(number, LOG_LEAF, None, f"leaf {index}'s entry names no game")
        elif game_id in self.logged:
            found(
                number,
                LOG_LEAF,
                game_id,
                f"game {game_id} is logged twice (leaves {self.logged[game_id][0]} and {index})",
            )
        else:
            self.logged[game_id] = (index, number, hashed)
            if "proof" in record:
                self._moneyless(number, game_id, entry, record["proof"], ring)

    def _moneyless(self, number: int, game_id: str, entry: str, proof: object, ring: KeyRing | None) -> None:
        """A logged game the books hold no record of, with its proof: it must be a checked proof that moved
        no money, whose leaf is this one; then it is accounted for (counted in the report's games)."""
        found = self.report.found
        if game_id in self.games:
            found(
                number, LOG_LEAF, game_id, f"a leaf carries a proof of game {game_id}, which the books hold"
            )
            return
        document = loads(entry)  # read once already, by _game_of
        checked = read_game_proof(proof, ring)
        rebuilt = game_log_leaf(
            {
                "status": document.get("status"),
                "pot_account_id": document.get("pot_account_id"),
                "proof": proof,
            }
        )
        problems = list(checked.problems) if checked is not None else ["no proof object"]
        if checked is not None and checked.facts is None:
            problems.append(f"malformed: {checked.malformed}")
        elif checked is not None and checked.facts is not None and checked.facts.transfers:
            problems.append("it moved money, which the books do not show")
        if rebuilt is None or rebuilt != leaf_hash(entry.encode()):
            problems.append("it is not the proof the leaf names")
        for problem in problems:
            found(
                number, LOG_LEAF, game_id, f"game {game_id}, logged without a record in the books: {problem}"
            )
        if not problems:
            self.games[game_id] = rebuilt
            self.report.games["cancelled"] = self.report.games.get("cancelled", 0) + 1

    def _append(self, hashed: bytes) -> None:
        level, current = 0, hashed
        while self.frontier and self.frontier[-1][0] == level:
            current = node_hash(self.frontier.pop()[1], current)
            level += 1
        self.frontier.append((level, current))

    def root(self) -> bytes:
        if not self.frontier:
            return EMPTY_TREE_HASH
        folded = self.frontier[-1][1]
        for _level, block in reversed(self.frontier[:-1]):
            folded = node_hash(block, folded)
        return folded

    # --- the end ----------------------------------------------------------------------------------------

    def finish(self, ring: KeyRing | None, ranges: dict[int, tuple[int, int]], signed_size: object) -> None:
        """`signed_size`: the header's `log_size` (format 3), what the writer signed it carries."""
        if signed_size is None:
            if self.present:
                self._checkpoint_problem(self.line, "a public log record the signed header does not name")
        elif not self.present:
            self._checkpoint_problem(1, f"the header signs a public log of {signed_size} games, not carried")
        elif self.checkpoint is not None and self.checkpoint.size != signed_size:
            self._checkpoint_problem(
                self.line, f"the header signs a public log of {signed_size} games, not this"
            )
        if not self.present:
            if self.leaves:
                self.report.found(self.leaf_line, LOG_LEAF, None, "log leaves without the log's checkpoint")
            self.report.notes.append(NO_LOG)
            if self.previous_given is not None:
                self._checkpoint_problem(
                    None, "a previous checkpoint was given, but the bundle carries no public log record"
                )
            return
        checkpoint, line = self.checkpoint, self.line
        if checkpoint is None or line is None:
            return
        found = self.report.found
        if self.leaves != checkpoint.size or not hmac.compare_digest(self.root(), checkpoint.root_hash):
            found(
                self.leaf_line or line,
                LOG_LEAF,
                None,
                f"the bundle's {self.leaves} log leaves do not rebuild the signed root of {checkpoint.size} games",
            )
        self._heads(line, checkpoint, ranges)
        self._completeness(checkpoint)
        self._consistency(line, checkpoint, ring)

    def _heads(self, line: int, checkpoint: Checkpoint, ranges: dict[int, tuple[int, int]]) -> None:
        for chain, (seq, hash_) in sorted(checkpoint.ledger_heads.items()):
            span = ranges.get(chain)
            if span is None or not span[0] <= seq <= span[1]:
                self.report.found(
                    line,
                    LOG_CHECKPOINT,
                    chain_label(chain, seq),
                    f"the log's ledger head {chain_label(chain, seq)} is not in the bundle",
                )
            elif self.head_hashes.get(chain) != hash_:
                self.report.found(
                    line,
                    LOG_CHECKPOINT,
                    chain_label(chain, seq),
                    f"ledger heads mismatch: the log pins {chain_label(chain, seq)} as {hash_[:16]}…, the bundle holds "
                    f"{(self.head_hashes.get(chain) or 'none')[:16]}…",
                )

    def _completeness(self, checkpoint: Checkpoint) -> None:
        found = self.report.found
        for game_id, (index, number, hashed) in self.logged.items():
            if game_id not in self.games:
                found(
                    number,
                    LOG_LEAF,
                    game_id,
                    f"game {game_id} is logged (leaf {index}) but left out of the bundle",
                )
            elif self.games[game_id] is None or not hmac.compare_digest(self.games[game_id] or b"", hashed):
                found(
                    number,
                    LOG_LEAF,
                    game_id,
                    f"the log's leaf {index} is not game {game_id}'s proof as the bundle holds it",
                )
        heads = checkpoint.ledger_heads
        for game_id, place in self.last_transfer.items():
            chain, seq = place
            if game_id in self.logged or seq > heads.get(chain, (0, ""))[0]:
                continue
            found(
                self.game_lines[game_id],
                "game",
                game_id,
                f"game {game_id} ended at {chain_label(chain, seq)}, before the log's checkpoint of {checkpoint.size} "
                "games was signed, but is not logged",
            )

    def _consistency(self, line: int, checkpoint: Checkpoint, ring: KeyRing | None) -> None:
        previous = (self.record or {}).get("previous")
        given = None
        if self.previous_given is not None and ring is not None:
            try:
                given = open_checkpoint(self.previous_given, ring)
            except LogError as error:
                self._checkpoint_problem(None, f"the previous checkpoint given: {error}")
                return
            if given.origin != checkpoint.origin:
                self._checkpoint_problem(
                    None, f"the previous checkpoint is of {given.origin}, not {checkpoint.origin}"
                )
                return
        if previous is None:
            if given is not None and given != checkpoint:
                self._checkpoint_problem(
                    line, f"no consistency proof from the previous checkpoint of {given.size} games"
                )
            return
        carried, path = _previous(previous, ring)
        if carried is None or path is None:
            self._checkpoint_problem(
                line, "the previous checkpoint or its consistency proof cannot be read or is not signed"
            )
            return
        earlier = given if given is not None else carried
        # The whole checkpoint, ledger lines too: the log signs one a size, so another of the same size and
        # root is a second statement of the books that go with that tree (pokna_verify.tlog.witness).
        if given is not None and given != carried:
            self._checkpoint_problem(
                line,
                f"the bundle's previous checkpoint ({carried.size} games) is not the one given ({given.size} games)",
            )
            return
        try:
            verify_consistency(earlier.size, checkpoint.size, earlier.root_hash, checkpoint.root_hash, path)
        except LogError as error:
            self._checkpoint_problem(
                line,
                f"the log of {checkpoint.size} games does not extend the previous one of {earlier.size}: {error}",
            )
            return
        if given is None:
            self.report.notes.append(
                f"the log extends its checkpoint of {carried.size} games carried in the bundle; give the one you "
                "kept (--previous-checkpoint) to check it against yours"
            )


def _previous(previous: object, ring: KeyRing | None) -> tuple[Checkpoint | None, Sequence[bytes] | None]:
    if not isinstance(previous, dict) or ring is None:
        return None, None
    note, hashes = previous.get("checkpoint"), previous.get("consistency")
    if (
        not isinstance(note, str)
        or not isinstance(hashes, list)
        or not all(isinstance(h, str) for h in hashes)
    ):
        return None, None
    try:
        return open_checkpoint(note, ring), [base64.b64decode(h, validate=True) for h in hashes]
    except (LogError, binascii.Error, ValueError):
        return None, None


def _game_of(entry: str) -> str | None:
    try:
        document = loads(entry)
    except ValueError:
        return None
    game_id = document.get("game_id") if isinstance(document, dict) else None
    return game_id if isinstance(game_id, str) else None
