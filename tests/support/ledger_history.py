"""A long history on a few accounts, written fast: deposits through ledger_post(), hundreds of transactions a
call, as the service's batches are written (pokna.ledger.posting_batch.batch_document). For tests of what
an account's history costs to read (tests/ledger/test_ledger_account_pages.py) and of a migration over
existing postings (tests/db/test_migration_posting_created_at.py).

The transactions' moments repeat (about three transactions a second of a made-up clock, drawn at random) and
do not follow seq: a page's order is the transaction's (created_at, id), ties broken by id, whatever the
order of writing."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import Engine, text

from pokna.db.models.tenant import Tenant
from pokna.db.types import new_id, utc_now
from pokna.ledger.drafts import draft_of, unchained
from pokna.ledger.model import AccountTransfer
from pokna.ledger.posting_batch import batch_document
from support.driver import funding_account, open_account
from support.sessions import make_sessionmaker, unit_of_work

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
POST = "SELECT status FROM ledger_post(:tenant, CAST(:batch AS jsonb))"


@dataclass(frozen=True)
class Books:
    """A tenant's funding account (the other side of every deposit) and its wallets."""

    tenant_id: str
    funding: str
    wallets: tuple[str, ...]


def open_books(engine: Engine, tenant_id: str, wallets: int = 2) -> Books:
    """The tenant's funding account of chain 0 and `wallets` new wallets (the tenant exists)."""
    with unit_of_work(make_sessionmaker(engine)) as session:
        funding = funding_account(session, tenant_id).id
        opened = tuple(
            open_account(session, tenant_id=tenant_id, kind="player_wallet").id for _ in range(wallets)
        )
    return Books(tenant_id, funding, opened)


def post_deposits(engine: Engine, books: Books, count: int, *, seed: int = 7, batch: int = 500) -> None:
    """`count` deposits of 1 from the funding account, to the wallets in turn, on chain 0, `batch` a call.
    Each call's transactions come in seq order after the chain's head (ledger_post() places them)."""
    rng = random.Random(seed)
    currency = {account: "CREDIT" for account in (books.funding, *books.wallets)}
    accounts = sorted(currency)
    done = 0
    while done < count:
        written = []
        for n in range(done, min(count, done + batch)):
            wallet = books.wallets[n % len(books.wallets)]
            draft = draft_of(
                "deposit", AccountTransfer("deposit", books.funding, wallet, 1).postings(), None, None
            )
            moment = EPOCH + timedelta(seconds=rng.randrange(count // 3 + 1))
            written.append(unchained(books.tenant_id, draft, currency, 0, ids=new_id, now=moment))
        document = batch_document(accounts, {}, written, 0)
        with engine.begin() as connection:
            status = connection.scalar(
                text(POST), {"tenant": books.tenant_id, "batch": json.dumps(document.as_json())}
            )
        assert status == "posted", status
        done += len(written)


def new_tenant_row(engine: Engine, name: str = "Tosche Station") -> str:
    """A tenant of its own (its row alone), for a database with no API key or app."""
    tenant_id = new_id("ten")
    with unit_of_work(make_sessionmaker(engine)) as session:
        session.add(Tenant(id=tenant_id, name=name, created_at=utc_now()))
    return tenant_id
