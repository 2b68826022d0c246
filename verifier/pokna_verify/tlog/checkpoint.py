"""C2SP tlog-checkpoint: the signed note's text that names a log's size and root.

    <origin>
    <tree size>
    <base64 root hash>
    [extension lines]

Pokna's extension lines are "ledger <chain> <seq> <hash>", one per ledger chain with a transaction, ascending
by chain: the same heads the ledger's own checkpoints sign. A player who keeps a checkpoint thereby pins the
books an auditor must be shown, not only the list of games. A witness that knows nothing of Pokna skips them;
Pokna's readers refuse a checkpoint with a `ledger ` line that is not one such head, or that names a chain
twice or out of order: skipped or read last-wins, it would pin no book of that chain (whose games the
auditor's completeness check then does not ask for), or pin one reader's head and not another's.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from dataclasses import dataclass

from pokna_verify.tlog.errors import MalformedNoteError
from pokna_verify.tlog.hashing import HASH_SIZE
from pokna_verify.tlog.note import std_b64decode

_SIZE = re.compile(r"0|[1-9][0-9]{0,19}")
_LEDGER_HEAD = re.compile(r"ledger (0|[1-9][0-9]{0,18}) ([1-9][0-9]{0,18}) ([0-9a-f]{64})")
_LEDGER_LINE = "ledger "
LedgerHeads = Mapping[int, tuple[int, str]]


@dataclass(frozen=True)
class Checkpoint:
    origin: str
    size: int
    root_hash: bytes
    extensions: tuple[str, ...] = ()

    def to_text(self) -> str:
        lines = [self.origin, str(self.size), base64.b64encode(self.root_hash).decode(), *self.extensions]
        return "".join(f"{line}\n" for line in lines)

    @property
    def ledger_heads(self) -> dict[int, tuple[int, str]]:
        """chain -> (seq, hash) from the extension lines; other extensions are not Pokna's and are skipped."""
        heads: dict[int, tuple[int, str]] = {}
        for line in self.extensions:
            match = _LEDGER_HEAD.fullmatch(line)
            if match:
                heads[int(match[1])] = (int(match[2]), match[3])
        return heads


def ledger_head_lines(heads: LedgerHeads) -> tuple[str, ...]:
    return tuple(f"ledger {chain} {seq} {hash_}" for chain, (seq, hash_) in sorted(heads.items()) if seq)


def parse_checkpoint(text: str) -> Checkpoint:
    """The checkpoint a signed note's text holds (see note.open_note); refuses anything else."""
    if not text.endswith("\n"):
        raise MalformedNoteError("a checkpoint ends with a newline")
    lines = text[:-1].split("\n")
    if len(lines) < 3:
        raise MalformedNoteError("a checkpoint has an origin, a size and a root hash line")
    origin, size_text, root_text, *extensions = lines
    if not origin or origin != origin.strip():
        raise MalformedNoteError("the checkpoint's origin line is empty or padded")
    if not _SIZE.fullmatch(size_text) or int(size_text) >= 2**64:
        raise MalformedNoteError(f"the checkpoint's size {size_text[:24]!r} is not a decimal tree size")
    root_hash = std_b64decode(root_text)
    if len(root_hash) != HASH_SIZE:
        raise MalformedNoteError(f"the checkpoint's root hash is {len(root_hash)} bytes, not {HASH_SIZE}")
    if any(not line for line in extensions):
        raise MalformedNoteError("a checkpoint's extension line is empty")
    _check_ledger_lines(extensions)
    return Checkpoint(origin, int(size_text), root_hash, tuple(extensions))


def _check_ledger_lines(extensions: list[str]) -> None:
    chains: list[int] = []
    for line in extensions:
        if not line.startswith(_LEDGER_LINE):
            continue
        match = _LEDGER_HEAD.fullmatch(line)
        if match is None:
            raise MalformedNoteError(f"{line[:100]!r} is not a ledger head: ledger <chain> <seq> <64 hex>")
        chains.append(int(match[1]))
    if chains != sorted(set(chains)):
        raise MalformedNoteError("the checkpoint's ledger heads name a chain twice or out of order")
