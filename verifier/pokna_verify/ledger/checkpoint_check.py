"""Signed checkpoints in the offline audit (pokna_verify.ledger.check): what a checkpoint pins, per chain, and the
findings when an export does not hold it. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from pokna_verify.crypto.signing import signature_problem
from pokna_verify.invariant import of_type
from pokna_verify.ledger.chain import GENESIS_HASH, LEDGER_CHAINS, chain_label
from pokna_verify.ledger.findings import AuditReport, Finding, is_chain, is_int

CHECKPOINT_TYPE = "pokna.ledger.checkpoint"


@dataclass(frozen=True)
class Pinned:
    """What a checkpoint pins: per chain, the (seq, hash) the export must contain; chain 0's is the
    checkpoint's own seq and hash (seq 0 and the genesis hash: chain 0 had no transaction yet)."""

    tenant_id: str
    seq: int
    heads: dict[int, tuple[int, str]]

    def seqs(self) -> dict[int, int]:
        return {chain: seq for chain, (seq, _hash) in self.heads.items()}


class UnusableCheckpoint(ValueError):
    """The checkpoint document is not a checkpoint at all (as opposed to one that fails to verify)."""


def checkpoint_target(
    checkpoint: Mapping[str, Any] | None, public_key: Ed25519PublicKey | None, report: AuditReport
) -> Pinned | None:
    """The (seq, hash) per chain the export must contain; a bad signature is a finding.

    The checkpoint's seq and hash are chain 0's head. One taken since there are chains also lists `heads`:
    every chain with a transaction, ascending by chain, each as {chain, seq, hash}; without `heads` (taken
    before there were chains) it pins chain 0 only."""
    if checkpoint is None:
        return None
    seq, hash_, tenant_id = checkpoint.get("seq"), checkpoint.get("hash"), checkpoint.get("tenant_id")
    if checkpoint.get("type") != CHECKPOINT_TYPE or not is_int(seq) or not isinstance(hash_, str):
        raise UnusableCheckpoint(
            f"not a ledger checkpoint (type must be {CHECKPOINT_TYPE!r}, with seq and hash)"
        )
    if not isinstance(tenant_id, str):
        raise UnusableCheckpoint("the checkpoint names no tenant")
    seq = of_type(seq, int, "a seq of the shape checked above")
    heads = {0: (seq, hash_)}
    if "heads" in checkpoint:
        heads = _checkpoint_heads(checkpoint["heads"], seq, hash_)
    if public_key is None:
        report.notes.append("no public key given: the checkpoint's signature was not checked")
        report.checkpoint_signature_unchecked = True
    else:
        problem = signature_problem(checkpoint, public_key)
        if problem is not None:
            report.findings.append(Finding(None, seq, f"checkpoint signature: {problem}"))
    return Pinned(tenant_id, seq, heads)


def _checkpoint_heads(listed: object, seq: int, hash_: str) -> dict[int, tuple[int, str]]:
    if not isinstance(listed, list):
        raise UnusableCheckpoint("the checkpoint's heads is not a list")
    heads: dict[int, tuple[int, str]] = {}
    for index, head in enumerate(listed):
        if not isinstance(head, dict) or set(head) != {"chain", "seq", "hash"}:
            raise UnusableCheckpoint(
                f"the checkpoint's heads[{index}] is not an object of chain, seq and hash"
            )
        chain, head_seq, head_hash = head["chain"], head["seq"], head["hash"]
        if not is_chain(chain):
            raise UnusableCheckpoint(
                f"the checkpoint's heads[{index}].chain is not an integer from 0 to {LEDGER_CHAINS - 1}"
            )
        if heads and chain <= max(heads):
            raise UnusableCheckpoint(
                f"the checkpoint's heads[{index}]: chain {chain} is repeated or out of order"
            )
        if not is_int(head_seq) or head_seq < 1 or not isinstance(head_hash, str):
            raise UnusableCheckpoint(
                f"the checkpoint's heads[{index}] needs a positive integer seq and a string hash"
            )
        if chain == 0 and (head_seq, head_hash) != (seq, hash_):
            raise UnusableCheckpoint("the checkpoint's head on chain 0 is not its seq and hash")
        heads[chain] = (head_seq, head_hash)
    if 0 not in heads:
        if (seq, hash_) != (0, GENESIS_HASH):
            raise UnusableCheckpoint(
                "the checkpoint's seq and hash name a head on chain 0 its heads do not list"
            )
        heads[0] = (0, GENESIS_HASH)
    return dict(sorted(heads.items()))


def check_pinned(pinned: Pinned, seen_hashes: dict[int, str], report: AuditReport) -> None:
    report.checkpoint_checked = True
    found = report.findings.append
    if report.tenant_id is not None and pinned.tenant_id != report.tenant_id:
        found(
            Finding(
                None,
                pinned.seq,
                f"the checkpoint is for tenant {pinned.tenant_id}, the export for {report.tenant_id}",
            )
        )
    for chain, (seq, hash_) in pinned.heads.items():
        where = chain_label(chain, seq)
        if seq == 0:  # chain 0 before its first transaction
            if hash_ != GENESIS_HASH:
                found(Finding(None, 0, "a checkpoint at seq 0 must carry the genesis hash"))
            continue
        if chain in seen_hashes:
            if seen_hashes[chain] != hash_:
                found(
                    Finding(
                        None,
                        seq,
                        f"{where}: the hash differs from the signed checkpoint (history rewritten)",
                        chain,
                    )
                )
            continue
        head = report.chains.get(chain)
        if head is None or seq > head.last_seq:
            ends = "the export ends" if chain == 0 else f"the export's chain {chain} ends"
            found(
                Finding(
                    None,
                    seq,
                    f"the signed checkpoint covers {where} but {ends} at seq {head.last_seq if head else 0} "
                    "(transactions missing from the end)",
                    chain,
                )
            )
        else:
            found(Finding(None, seq, f"the export does not contain the checkpoint's {where}", chain))
