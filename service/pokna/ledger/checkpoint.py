"""Signed checkpoints of a tenant's chain head: what lets an auditor trust the end of an export.

The hash chain shows that nothing inside an export was changed, but anyone holding the export can rewrite
its tail and recompute every hash. A checkpoint is the service's Ed25519 signature over {tenant_id, seq,
hash, created_at} at some moment; published or handed to the auditor, it pins history up to that seq.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sqlalchemy.orm import Session

from pokna.crypto.signing import SIGNATURE_FIELD, sign_document
from pokna.db.types import new_id, utc_now
from pokna.ledger import repository
from pokna.ledger.audit import CHECKPOINT_TYPE
from pokna.ledger.chain import format_timestamp
from pokna.ledger.errors import InvalidPostings, TenantNotFound


@dataclass(frozen=True)
class Checkpoint:
    """A signed chain head as stored (checkpoint_document gives the signed document itself)."""

    id: str
    tenant_id: str
    seq: int
    hash: str
    created_at: datetime
    key_id: str
    signature: str


def take_checkpoint(session: Session, tenant_id: str, signing_key: Ed25519PrivateKey) -> Checkpoint:
    """Sign the tenant's current chain head (seq 0 and the genesis hash for an empty ledger)."""
    if not repository.tenant_exists(session, tenant_id):
        raise TenantNotFound(f"no tenant {tenant_id}", tenant_id=tenant_id)
    seq, hash_ = repository.read_head(session, tenant_id)
    created_at = utc_now()
    signed = sign_document(
        {
            "type": CHECKPOINT_TYPE,
            "tenant_id": tenant_id,
            "seq": seq,
            "hash": hash_,
            "created_at": format_timestamp(created_at),
        },
        signing_key,
    )
    checkpoint = Checkpoint(
        id=new_id("ckpt"),
        tenant_id=tenant_id,
        seq=seq,
        hash=hash_,
        created_at=created_at,
        key_id=signed["key_id"],
        signature=signed[SIGNATURE_FIELD],
    )
    repository.insert_checkpoint(session, vars(checkpoint))
    return checkpoint


def checkpoint_document(checkpoint: Checkpoint) -> dict[str, Any]:
    """The signed JSON document, exactly as signed: give this (and the public key) to an auditor."""
    return {
        "type": CHECKPOINT_TYPE,
        "tenant_id": checkpoint.tenant_id,
        "seq": checkpoint.seq,
        "hash": checkpoint.hash,
        "created_at": format_timestamp(checkpoint.created_at),
        "key_id": checkpoint.key_id,
        SIGNATURE_FIELD: checkpoint.signature,
    }


def list_checkpoints(
    session: Session, tenant_id: str, *, limit: int = 50, before_seq: int | None = None
) -> list[Checkpoint]:
    """Newest first."""
    if not 1 <= limit <= 500:
        raise InvalidPostings("limit must be between 1 and 500")
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
        for row in repository.checkpoints(session, tenant_id, limit=limit, before_seq=before_seq)
    ]


def checkpoint_moved_heads(session: Session, signing_key: Ed25519PrivateKey) -> int:
    """The periodic half of "periodically and on demand": sign every chain head that moved since its last
    checkpoint (`pokna sweep` calls this), so an auditor never has more than one sweep of unpinned history."""
    taken = 0
    for tenant_id in repository.tenant_ids_with_ledgers(session):
        seq, _hash = repository.read_head(session, tenant_id)
        latest = list_checkpoints(session, tenant_id, limit=1)
        if seq > 0 and (not latest or latest[0].seq < seq):
            take_checkpoint(session, tenant_id, signing_key)
            taken += 1
    return taken
