"""Signed checkpoints of a tenant's chain heads: what lets an auditor trust the end of an export.

The hash chains show that nothing inside an export was changed, but anyone holding the export can rewrite
its tail and recompute every hash. A checkpoint is the service's Ed25519 signature over {tenant_id, seq,
hash, heads, created_at} at some moment: `heads` every chain's (chain, seq, hash) that has a transaction,
`seq` and `hash` chain 0's (what a checkpoint said before there were chains, so a reader of that time still
finds chain 0 pinned). Published or handed to the auditor, it pins every chain's history up to its head.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from psycopg import AsyncConnection
from psycopg.types.json import Json

from pokna.db.types import new_id, utc_now
from pokna.idempotency.keyed import Transaction
from pokna.ledger import repository
from pokna.tenants.service import tenant_ids_async
from pokna_verify.crypto.signing import SIGNATURE_FIELD, sign_document
from pokna_verify.ledger.chain import format_timestamp
from pokna_verify.ledger.check import CHECKPOINT_TYPE


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
    heads: list[dict[str, Any]] | None = None
    """[{chain, seq, hash}] ascending by chain; None for a checkpoint taken before there were chains."""


async def take_checkpoint_async(
    connection: AsyncConnection[Any], tenant_id: str, signing_key: Ed25519PrivateKey
) -> Checkpoint:
    """Sign the tenant's current chain heads (chain 0 at seq 0 and the genesis hash for an empty ledger), in
    the caller's transaction (the sweep's, `pokna ledger checkpoint`'s), for a tenant known to exist."""
    heads = await repository.read_heads_async(connection, tenant_id)
    checkpoint = _signed(tenant_id, heads, signing_key)
    await connection.execute(
        repository.INSERT_CHECKPOINT, {**vars(checkpoint), "heads": Json(checkpoint.heads)}
    )
    return checkpoint


async def take_checkpoint_in(opened: Transaction, signing_key: Ed25519PrivateKey) -> Checkpoint:
    """`take_checkpoint_async` for the caller's tenant in a keyed transaction (`POST /v1/ledger/checkpoints`):
    the heads read in its first round trip, the checkpoint written with its COMMIT."""
    connection = opened.connection
    found = await opened.read(
        lambda tenant_id: connection.execute(repository.HEADS, {"tenant_id": tenant_id})
    )
    checkpoint = _signed(opened.tenant, repository.heads_of(await found.fetchall()), signing_key)
    await connection.execute(
        repository.INSERT_CHECKPOINT, {**vars(checkpoint), "heads": Json(checkpoint.heads)}
    )
    return checkpoint


def _signed(
    tenant_id: str, all_heads: dict[int, tuple[int, str]], signing_key: Ed25519PrivateKey
) -> Checkpoint:
    """Signed as checkpoint_document gives it, so what is stored and what an auditor is given are the
    document that was signed (sign_document sets `key_id` and leaves out the signature)."""
    seq, hash_ = all_heads[0]
    heads = [
        {"chain": chain, "seq": head_seq, "hash": head_hash}
        for chain, (head_seq, head_hash) in sorted(all_heads.items())
        if head_seq > 0
    ]
    unsigned = Checkpoint(
        new_id("ckpt"), tenant_id, seq, hash_, utc_now(), key_id="", signature="", heads=heads
    )
    signed = sign_document(checkpoint_document(unsigned), signing_key)
    return replace(unsigned, key_id=signed["key_id"], signature=signed[SIGNATURE_FIELD])


def checkpoint_document(checkpoint: Checkpoint) -> dict[str, Any]:
    """The signed JSON document, exactly as signed: give this (and the public key) to an auditor."""
    heads = {} if checkpoint.heads is None else {"heads": checkpoint.heads}
    return {
        "type": CHECKPOINT_TYPE,
        "tenant_id": checkpoint.tenant_id,
        "seq": checkpoint.seq,
        "hash": checkpoint.hash,
        **heads,
        "created_at": format_timestamp(checkpoint.created_at),
        "key_id": checkpoint.key_id,
        SIGNATURE_FIELD: checkpoint.signature,
    }


async def checkpoint_moved_heads(connection: AsyncConnection[Any], signing_key: Ed25519PrivateKey) -> int:
    """The periodic half of "periodically and on demand": sign a tenant's heads when any moved since its
    last checkpoint (`pokna sweep` calls this), so an auditor never has more than one sweep of unpinned
    history. Tenant by tenant, each in a transaction of its own."""
    taken = 0
    for tenant_id in await tenant_ids_async(connection):
        async with connection.transaction():
            heads = await repository.read_heads_async(connection, tenant_id)
            moved = {chain: seq for chain, (seq, _hash) in heads.items() if seq}
            found = await connection.execute(repository.LATEST_CHECKPOINT, {"tenant_id": tenant_id})
            latest = await found.fetchone()
            if moved and (latest is None or _signed_seqs(int(latest[0]), latest[1]) != moved):
                await take_checkpoint_async(connection, tenant_id, signing_key)
                taken += 1
    return taken


async def oldest_unsigned_at(connection: AsyncConnection[Any]) -> datetime | None:
    """When the oldest posting that no checkpoint pins yet was made, across tenants (None: every head is
    signed). `pokna sweep` signs every moved head, so this stays within a sweep's interval while the sweeper
    runs; `/metrics` shows its age."""
    row = await (await connection.execute(repository.OLDEST_UNSIGNED)).fetchone()
    return None if row is None or row[0] is None else row[0].astimezone(UTC)


def _signed_seqs(seq: int, heads: list[dict[str, Any]] | None) -> dict[int, int]:
    """{chain: seq} a checkpoint signed (chain 0 alone for one taken before there were chains)."""
    if heads is None:
        return {0: seq} if seq else {}
    return {int(head["chain"]): int(head["seq"]) for head in heads}
