"""The hash chains: exactly which bytes each journal transaction's hash covers. Pure; the verifier uses it.

hash = SHA-256 (lower-case hex) of the RFC 8785 canonical JSON of
    {"chain" (only when it is not 0), "seq", "prev_hash", "tenant_id", "id", "kind", "reference", "metadata",
     "created_at", "postings": [{"account_id", "amount", "currency"}, ...in leg order]}
with created_at as UTC text `YYYY-MM-DDTHH:MM:SS.ffffffZ` and the first transaction of each chain's prev_hash
64 zeros.

A tenant's journal is LEDGER_CHAINS hash chains (docs/ledger.md, "Chains"): each transaction is on one (a
game's transfers on the one its game id picks, chain_for; a deposit or withdrawal on a free one, which no
check here depends on), and `seq` counts per chain. Chain 0 is hashed without a `chain` field, so every transaction written before there
were chains (all on chain 0) keeps its hash, and an export of that time verifies as it did.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final

from pokna_verify.crypto.canonical_json import (
    MAX_SAFE_INTEGER,
    canonicalize,
    encode_sorted,
    stdlib_form_is_canonical,
)

GENESIS_HASH: Final = "0" * 64
LEDGER_CHAINS: Final = 16
"""How many hash chains a tenant's journal has. The database refuses a chain outside 0..LEDGER_CHAINS-1."""
HASHED_FIELDS: Final = (
    "seq",
    "prev_hash",
    "tenant_id",
    "id",
    "kind",
    "reference",
    "metadata",
    "created_at",
    "postings",
)
POSTING_FIELDS: Final = ("account_id", "amount", "currency")


def format_timestamp(moment: datetime) -> str:
    """Microsecond UTC text: both backends store microseconds, so the text survives a round trip."""
    if moment.tzinfo is None:
        raise ValueError("naive datetime; the ledger hashes only timezone-aware UTC")
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def chain_for(partition_key: str) -> int:
    """The chain a partition key's transactions go on: the first four bytes of its SHA-256, modulo the chain
    count. Every transfer of one game is on one chain, in the order it was posted; a deposit or withdrawal
    takes its wallet's chain if it is free, another if not (docs/ledger.md, "Free chains")."""
    digest = hashlib.sha256(partition_key.encode("utf-8")).digest()
    return int.from_bytes(digest[:4], "big") % LEDGER_CHAINS


def chain_label(chain: int, seq: object) -> str:
    """How a transaction is named to people: `seq 12` on chain 0 (as before chains), `chain 3 seq 12`."""
    where = f"seq {seq}" if seq is not None else "seq ?"
    return where if chain == 0 else f"chain {chain} {where}"


def transaction_document(
    *,
    chain: int = 0,
    seq: int,
    prev_hash: str,
    tenant_id: str,
    transaction_id: str,
    kind: str,
    reference: str | None,
    metadata: Mapping[str, Any],
    created_at: str,
    postings: Sequence[tuple[str, int, str]],
) -> dict[str, Any]:
    """The hashed document. `postings` are (account_id, amount, currency) in leg order."""
    document: dict[str, Any] = {} if chain == 0 else {"chain": chain}
    return document | {
        "seq": seq,
        "prev_hash": prev_hash,
        "tenant_id": tenant_id,
        "id": transaction_id,
        "kind": kind,
        "reference": reference,
        "metadata": metadata,
        "created_at": created_at,
        "postings": [
            {"account_id": account_id, "amount": amount, "currency": currency}
            for account_id, amount, currency in postings
        ],
    }


def document_hash(document: Mapping[str, Any]) -> str:
    """SHA-256 hex of the canonical bytes of exactly the hashed fields of `document`."""
    hashed = {name: document[name] for name in HASHED_FIELDS}
    chain = document.get("chain", 0)
    if chain != 0:
        hashed["chain"] = chain
    hashed["postings"] = [
        {name: posting[name] for name in POSTING_FIELDS} for posting in document["postings"]
    ]
    if _envelope_is_canonical(hashed):
        try:
            return hashlib.sha256(encode_sorted(hashed).encode("utf-8")).hexdigest()
        except UnicodeEncodeError:
            pass
    return hashlib.sha256(canonicalize(hashed)).hexdigest()


def _envelope_is_canonical(hashed: Mapping[str, Any]) -> bool:
    """stdlib_form_is_canonical for the known shape, walking only `metadata` generically (3x faster)."""
    for name in ("seq", "chain"):
        number = hashed.get(name, 0)
        if type(number) is not int or not -MAX_SAFE_INTEGER <= number <= MAX_SAFE_INTEGER:
            return False
    for name in ("prev_hash", "tenant_id", "id", "kind", "created_at"):
        if type(hashed[name]) is not str:
            return False
    if hashed["reference"] is not None and type(hashed["reference"]) is not str:
        return False
    for posting in hashed["postings"]:
        amount = posting["amount"]
        if type(amount) is not int or not -MAX_SAFE_INTEGER <= amount <= MAX_SAFE_INTEGER:
            return False
        if type(posting["account_id"]) is not str or type(posting["currency"]) is not str:
            return False
    metadata = hashed["metadata"]
    return metadata == {} or stdlib_form_is_canonical(metadata)


def hash_parts(
    *,
    chain: int = 0,
    tenant_id: str,
    transaction_id: str,
    kind: str,
    reference: str | None,
    metadata: Mapping[str, Any],
    created_at: str,
    postings: Sequence[tuple[str, int, str]],
) -> tuple[bytes, bytes, bytes]:
    """The canonical bytes of a transaction's document, split around the two values only known under the
    tenant's head lock: canonical bytes = before_prev || prev_hash || before_seq || seq || rest.

    The hashed document's keys sort as (chain,) created_at, id, kind, metadata, postings, prev_hash,
    reference, seq, tenant_id, and a hex prev_hash and a decimal seq are their own canonical text (between quotes for the
    hash), so the writer can hash without re-encoding: PostgreSQL's ledger_post() (tests/support/chain_hash.py
    states it in Python).
    """
    known = transaction_document(
        chain=chain,
        seq=0,
        prev_hash="",
        tenant_id=tenant_id,
        transaction_id=transaction_id,
        kind=kind,
        reference=reference,
        metadata=metadata,
        created_at=created_at,
        postings=postings,
    )
    leading = ("chain",) if chain != 0 else ()
    head = canonicalize(
        {name: known[name] for name in (*leading, "created_at", "id", "kind", "metadata", "postings")}
    )
    before_prev = head[:-1] + b',"prev_hash":"'
    before_seq = b'","reference":' + canonicalize(reference) + b',"seq":'
    rest = b',"tenant_id":' + canonicalize(tenant_id) + b"}"
    return before_prev, before_seq, rest


def line_hash(line: Mapping[str, Any]) -> str:
    """document_hash of an exported line (or any document with the hashed fields), twice as fast.

    The verifier's hot path: for the usual shape it writes the canonical text directly, with the keys in
    their sorted order, instead of copying the hashed fields and sorting them in the encoder; the same
    domain as document_hash's fast path, and anything outside it goes to document_hash itself.
    """
    seq, metadata, reference = line["seq"], line["metadata"], line["reference"]
    chain = line.get("chain", 0)
    if type(seq) is not int or not -MAX_SAFE_INTEGER <= seq <= MAX_SAFE_INTEGER:
        return document_hash(line)
    if type(chain) is not int or not -MAX_SAFE_INTEGER <= chain <= MAX_SAFE_INTEGER:
        return document_hash(line)
    if reference is not None and type(reference) is not str:
        return document_hash(line)
    if metadata != {} and not stdlib_form_is_canonical(metadata):
        return document_hash(line)
    texts = [line[name] for name in ("created_at", "id", "kind", "prev_hash", "tenant_id")]
    if any(type(text) is not str for text in texts):
        return document_hash(line)
    postings = []
    for posting in line["postings"]:
        account_id, amount, currency = posting["account_id"], posting["amount"], posting["currency"]
        if type(amount) is not int or not -MAX_SAFE_INTEGER <= amount <= MAX_SAFE_INTEGER:
            return document_hash(line)
        if type(account_id) is not str or type(currency) is not str:
            return document_hash(line)
        postings.append(
            f'{{"account_id":{_quote(account_id)},"amount":{amount},"currency":{_quote(currency)}}}'
        )
    created_at, transaction_id, kind, prev_hash, tenant_id = map(_quote, texts)
    text = (
        ("{" if chain == 0 else f'{{"chain":{chain},')
        + f'"created_at":{created_at},"id":{transaction_id},"kind":{kind},'
        f'"metadata":{"{}" if metadata == {} else encode_sorted(metadata)},'
        f'"postings":[{",".join(postings)}],"prev_hash":{prev_hash},'
        f'"reference":{"null" if reference is None else _quote(reference)},"seq":{seq},"tenant_id":{tenant_id}}}'
    )
    try:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()
    except UnicodeEncodeError:
        return document_hash(line)


_quote = json.encoder.encode_basestring
