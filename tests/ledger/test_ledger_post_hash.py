"""The hash recipe lives once, in pokna_verify.ledger.chain; ledger_post() computes it in PL/pgSQL from the
parts the service encodes. Over generated transactions (texts that could trip an encoder, nested metadata,
several transactions a batch, chain 0 and the others), the hash PostgreSQL stores is the recipe's hash of
the transaction as drafted, and each links onto the one before it.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine, text
from sqlalchemy.orm import Session, sessionmaker

from pokna.ledger.drafts import draft_of, unchained
from pokna.ledger.model import Posting, TransactionKind
from pokna.ledger.posting_batch import batch_document
from pokna_verify.ledger.chain import document_hash, format_timestamp, transaction_document
from support.driver import funding_account, open_account
from support.sessions import unit_of_work

pytest_plugins = ["ledger_fixtures"]

# Any text PostgreSQL can hold: no NUL, no lone surrogates; quotes, backslashes, controls, U+2028 and
# astral characters are what an encoder could get wrong on one side only.
texts = st.text(
    alphabet=st.one_of(
        st.characters(min_codepoint=1, max_codepoint=0x7F),
        st.sampled_from(['"', "\\", "\u2028", "\ufb01", "\uffff", "\U0001f3b2", "é"]),
        st.characters(exclude_categories=["Cs"], exclude_characters="\x00"),
    ),
    max_size=12,
)
metadata_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1) | texts,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(texts, children, max_size=3),
    max_leaves=8,
)
transactions = st.lists(
    st.tuples(
        st.sampled_from(list(TransactionKind)),
        st.none() | texts.filter(bool),
        st.dictionaries(texts, metadata_values, max_size=3),
        st.integers(min_value=1, max_value=10**12),
    ),
    min_size=1,
    max_size=3,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(chain=st.integers(min_value=0, max_value=15), batch=transactions)
def test_the_hash_postgresql_stores_is_the_recipes(
    engine: Engine,
    sessions: sessionmaker[Session],
    tenant_id: str,
    chain: int,
    batch: list[tuple[TransactionKind, str | None, dict[str, Any], int]],
) -> None:
    with unit_of_work(sessions) as session:
        funding = funding_account(session, tenant_id, chain=chain).id
        wallet = open_account(session, tenant_id=tenant_id, kind="player_wallet").id
    accounts = sorted([funding, wallet])
    currency_of = dict.fromkeys(accounts, "CREDIT")
    written = [
        unchained(
            tenant_id,
            draft_of(kind, [Posting(wallet, amount), Posting(funding, -amount)], reference, metadata),
            currency_of,
            chain,
        )
        for kind, reference, metadata, amount in batch
    ]
    document = batch_document(accounts, {}, written, chain)
    with engine.begin() as connection:
        answer = connection.execute(
            text(
                "SELECT status, first_seq, first_prev_hash FROM ledger_post(:tenant, CAST(:batch AS jsonb))"
            ),
            {"tenant": tenant_id, "batch": json.dumps(document.as_json())},
        ).one()
        stored = connection.execute(
            text(
                "SELECT seq, prev_hash, hash FROM journal_transaction "
                "WHERE tenant_id = :tenant AND id = ANY(:ids) ORDER BY seq"
            ),
            {"tenant": tenant_id, "ids": [transaction.row["id"] for transaction in written]},
        ).all()
    assert answer.status == "posted"
    prev_hash = answer.first_prev_hash
    for seq, (transaction, row) in enumerate(zip(written, stored, strict=True), start=answer.first_seq):
        drafted = transaction.row
        recipe = document_hash(
            transaction_document(
                chain=chain,
                seq=seq,
                prev_hash=prev_hash,
                tenant_id=tenant_id,
                transaction_id=drafted["id"],
                kind=drafted["kind"],
                reference=drafted["reference"],
                metadata=drafted["metadata"],
                created_at=format_timestamp(drafted["created_at"]),
                postings=[
                    (leg["account_id"], leg["amount"], leg["currency"]) for leg in transaction.postings
                ],
            )
        )
        assert (row.seq, row.prev_hash, row.hash) == (seq, prev_hash, recipe)
        prev_hash = recipe
