"""Bundles and hash chains: a bundle written before there were chains (format 1) still verifies, and a
checkpoint that signs every chain's head is placed and checked on each chain of a format 2 bundle."""

from __future__ import annotations

import asyncio
import json
from contextlib import nullcontext
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from pokna.bundles import BundleRange, open_bundle
from pokna.db.models.ledger import Account
from pokna.ledger import chain_for
from pokna.ledger.errors import TenantNotFound
from pokna.runtime import Runtime
from pokna_verify.bundle.records import (
    CHECKPOINT,
    HEADER,
    KEY_RING,
    account_record,
    end_record,
    transaction_record_text,
)
from pokna_verify.bundle.report import Verdict
from pokna_verify.bundle.scan import verify_bundle
from pokna_verify.crypto.signing import generate_signing_key, sign_document
from pokna_verify.fairness.keyring import KeyRing
from pokna_verify.ledger.chain import GENESIS_HASH, line_hash
from support.driver import export_jsonl, take_checkpoint
from support.sessions import unit_of_work
from support.tenant_api import TenantApi, new_tenant


def _wallets(api: TenantApi, count: int) -> list[str]:
    return [api.wallet(external_id=f"w{index}") for index in range(count)]


def _moved(response: Any) -> None:
    assert response.status_code == 201, response.text


def _old_bundle(sessions: sessionmaker[Session], tenant_id: str) -> tuple[list[str], KeyRing]:
    """A bundle as the writer made it before there were chains: header format 1 with no `chains`, export
    lines without `chain` (they began with `"seq"`), every checkpoint right after the transaction at its
    seq, signed without `heads`."""
    key = generate_signing_key()
    ring = KeyRing.of(key.public_key())
    with unit_of_work(sessions) as session:
        lines = [line.replace('{"chain" : 0, ', "{", 1) for line in export_jsonl(session, tenant_id)]
        documents = [json.loads(line) for line in lines]
        named = sorted({p["account_id"] for d in documents for p in d["postings"]})
        kinds = {
            row.id: (row.kind, row.currency)
            for row in session.execute(
                select(Account.id, Account.kind, Account.currency).where(
                    Account.tenant_id == tenant_id, Account.id.in_(named)
                )
            )
        }
    assert all(line.startswith('{"seq" : ') for line in lines)
    header = {
        "type": HEADER,
        "format": 1,
        "tenant_id": tenant_id,
        "from_seq": 1,
        "to_seq": len(lines),
        "first_prev_hash": GENESIS_HASH,
        "last_hash": documents[-1]["hash"],
        "transactions": len(lines),
        "created_at": "2026-11-30T12:00:00.000000Z",
    }
    out = [
        json.dumps(sign_document(header, key)) + "\n",
        json.dumps({"type": KEY_RING, **ring.to_json()}) + "\n",
    ]
    counts: dict[str, int] = {}
    seen: set[str] = set()
    for text, document in zip(lines, documents, strict=True):
        for posting in document["postings"]:
            if posting["account_id"] not in seen:
                seen.add(posting["account_id"])
                counts["account"] = counts.get("account", 0) + 1
                out.append(
                    json.dumps(account_record(posting["account_id"], *kinds[posting["account_id"]])) + "\n"
                )
        counts["transaction"] = counts.get("transaction", 0) + 1
        out.append(transaction_record_text(text.rstrip("\n")) + "\n")
        if document["seq"] == 2:
            checkpoint = {
                "type": CHECKPOINT,
                "tenant_id": tenant_id,
                "seq": 2,
                "hash": document["hash"],
                "created_at": "2026-11-30T11:00:00.000000Z",
            }
            counts[CHECKPOINT] = counts.get(CHECKPOINT, 0) + 1
            out.append(json.dumps(sign_document(checkpoint, key)) + "\n")
    out.append(json.dumps(end_record(counts)) + "\n")
    return out, ring


def test_a_bundle_from_before_chains_still_verifies(
    client: TestClient, sessions: sessionmaker[Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("pokna.ledger.moving.chain_for", lambda _key: 0)  # the journal before chains
    api = new_tenant(client, sessions, "Mos Eisley")
    tenant_id = api.tenant_id
    wallets = _wallets(api, 2)
    for wallet in wallets:
        _moved(api.deposit(wallet, 50))
    _moved(api.withdraw(wallets[0], 20))
    lines, ring = _old_bundle(sessions, tenant_id)
    report = verify_bundle(lines, keys=ring)
    assert report.findings == [], report.to_json()
    assert report.verdict is Verdict.VALID
    assert (report.from_seq, report.to_seq, report.chains) == (1, 3, [])
    assert report.records[CHECKPOINT] == 1

    # Its checks are what they were: an edit is found and named by its seq alone.
    documents = [json.loads(line) for line in lines]
    second = next(d for d in documents if d["type"] == "transaction" and d["seq"] == 2)
    second["postings"][0]["amount"] += 1
    tampered = verify_bundle([json.dumps(d) + "\n" for d in documents], keys=ring)
    assert tampered.verdict is Verdict.INVALID
    named = {finding.record_id for finding in tampered.findings if finding.record == "transaction"}
    assert "seq 2" in named
    assert all(name is not None and name.startswith("seq ") for name in named)


def _bundle(runtime: Runtime, tenant_id: str, **span: Any) -> list[str]:
    async def written() -> str:
        async with runtime.aio.connection() as connection:
            bundle = await open_bundle(connection, runtime.keys, tenant_id, BundleRange(**span))
            return "".join([chunk async for chunk in bundle.chunks(lambda: nullcontext(connection))])

    return asyncio.run(written()).splitlines(keepends=True)


def test_a_checkpoint_of_every_head_is_checked_on_each_chain(
    client: TestClient, sessions: sessionmaker[Session], runtime: Runtime
) -> None:
    api = new_tenant(client, sessions, "Mos Eisley")
    tenant_id = api.tenant_id
    wallets = _wallets(api, 6)
    for round_ in range(3):
        for wallet in wallets:  # each deposit on its wallet's chain
            _moved(api.deposit(wallet, 10))
        if round_ == 1:
            with unit_of_work(sessions) as session:
                take_checkpoint(session, tenant_id, runtime.keys.signing_key)
    ring = runtime.keys.key_ring
    chains = sorted({chain_for(wallet) for wallet in wallets})
    assert len(chains) > 1

    documents = [json.loads(line) for line in _bundle(runtime, tenant_id)]
    assert [entry["chain"] for entry in documents[0]["chains"]] == chains
    (index,) = [i for i, d in enumerate(documents) if d["type"] == CHECKPOINT]
    checkpoint = documents[index]
    first = checkpoint["heads"][0]
    assert (documents[index - 1]["chain"], documents[index - 1]["seq"]) == (first["chain"], first["seq"])
    report = verify_bundle([json.dumps(d) + "\n" for d in documents], keys=ring)
    assert report.findings == [], report.to_json()

    # A bundle of one chain only holds the checkpoint after that chain's pinned head.
    last = checkpoint["heads"][-1]
    alone = [json.loads(line) for line in _bundle(runtime, tenant_id, chain=last["chain"])]
    (at,) = [i for i, d in enumerate(alone) if d["type"] == CHECKPOINT]
    assert (alone[at - 1]["chain"], alone[at - 1]["seq"]) == (last["chain"], last["seq"])
    assert verify_bundle([json.dumps(d) + "\n" for d in alone], keys=ring).findings == []

    # Rewriting a later chain's history consistently (every hash recomputed) is caught by the checkpoint.
    victim = next(
        d for d in documents if d["type"] == "transaction" and (d["chain"], d["seq"]) == (last["chain"], 1)
    )
    for posting in victim["postings"]:
        posting["amount"] += 1 if posting["amount"] > 0 else -1
    previous = None
    for d in documents:
        if d["type"] == "transaction" and d["chain"] == last["chain"]:
            if previous is not None:
                d["prev_hash"] = previous
            d["hash"] = previous = line_hash({k: v for k, v in d.items() if k != "type"})
    rewritten = verify_bundle([json.dumps(d) + "\n" for d in documents], keys=ring)
    name = f"chain {last['chain']} seq {last['seq']}" if last["chain"] else f"seq {last['seq']}"
    assert any(
        finding.record == CHECKPOINT and f"{name}: the hash differs" in finding.problem
        for finding in rewritten.findings
    ), rewritten.to_json()


def test_every_chain_is_signed_whole_in_order(
    client: TestClient, sessions: sessionmaker[Session], runtime: Runtime
) -> None:
    api = new_tenant(client, sessions, "Mos Eisley")
    tenant_id = api.tenant_id
    for wallet in _wallets(api, 6):
        for _ in range(2):
            _moved(api.deposit(wallet, 10))
    ring = runtime.keys.key_ring
    documents = [json.loads(line) for line in _bundle(runtime, tenant_id)]
    chains = [entry["chain"] for entry in documents[0]["chains"]]
    assert len(chains) > 1
    assert verify_bundle([json.dumps(d) + "\n" for d in documents], keys=ring).findings == []

    def lines(records: list[dict[str, Any]]) -> list[str]:
        return [json.dumps(d) + "\n" for d in records]

    # A whole chain left out (the trailer recounted): the signed header names it.
    gone = chains[-1]
    kept = [d for d in documents if not (d["type"] == "transaction" and d["chain"] == gone)]
    kept[-1]["records"]["transaction"] -= len(documents) - len(kept)
    report = verify_bundle(lines(kept), keys=ring)
    assert any(f"chain {gone} transactions" in finding.problem for finding in report.findings), (
        report.to_json()
    )

    # A later chain's transactions moved before an earlier chain's.
    first, last = chains[0], chains[-1]
    moved = next(d for d in documents if d["type"] == "transaction" and d["chain"] == last)
    reordered = [d for d in documents if d is not moved]
    at = next(i for i, d in enumerate(reordered) if d["type"] == "transaction" and d["chain"] == first)
    reordered.insert(at, moved)
    found = verify_bundle(lines(reordered), keys=ring).findings
    assert any("a bundle holds its chains in ascending order" in finding.problem for finding in found)


def test_a_bundle_of_a_tenant_that_does_not_exist_is_refused_before_its_first_byte(runtime: Runtime) -> None:
    """The API and the CLI know the tenant before they ask; a caller that does not is told so."""
    with pytest.raises(TenantNotFound, match="no tenant ten_nope"):
        _bundle(runtime, "ten_nope")
