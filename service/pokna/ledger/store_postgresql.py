"""The ledger on PostgreSQL: one round trip under the lock to post, and JSONL lines from raw columns.

Everything that needs no lock happens before the lock is taken (validation, ids, timestamps, the hashed
bytes around seq and prev_hash); then one call to the ledger_post() function takes the head lock and the
account locks, checks the balances, hashes, writes and advances the head
(service/pokna/sql/ledger_post.sql). The head stays locked until the caller commits.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from json.encoder import encode_basestring
from typing import Any, NamedTuple

import psycopg
from sqlalchemy.orm import Session

from pokna.ledger import account_cache, repository
from pokna.ledger.books_repository import SeqRange
from pokna.ledger.chain import format_timestamp
from pokna.ledger.drafts import Draft, Unchained, account_ids, posted, unchained
from pokna.ledger.errors import BalancesChanged, InsufficientFunds
from pokna.ledger.model import PostedTransaction, check_new_balance, check_postings
from pokna.ledger.refusals import account_not_in_tenant, replayed, tenant_not_found
from pokna.ledger.store import LedgerStore, Posted


class PostOutcome(NamedTuple):
    """ledger_post()'s answer: `status` says whether it posted, and if not, why (refused_* name the culprit).
    `held_*` are the locked accounts' balances: after the posting, or as found when refusing."""

    status: str
    refused_account_id: str | None
    refused_balance: int | None
    refused_change: int | None
    first_seq: int | None
    first_prev_hash: str | None
    hashes: list[str] | None
    held_account_ids: list[str] | None
    held_balances: list[int] | None


_LEDGER_POST = f"SELECT {', '.join(PostOutcome._fields)} FROM ledger_post(%s, %s::jsonb)"  # noqa: S608


class PostgresqlLedgerStore(LedgerStore):
    def post(
        self,
        session: Session,
        tenant_id: str,
        drafts: Sequence[Draft],
        expected_balances: Mapping[str, int],
        chain: int,
    ) -> Posted:
        """Everything that needs no lock first, then one round trip to ledger_post() for what does."""
        involved = sorted(account_ids(drafts) | expected_balances.keys())
        accounts = account_cache.tenants_and_currencies(session, tenant_id, involved)
        for account_id in [posting.account_id for draft in drafts for posting in draft.postings] + list(
            expected_balances
        ):
            if accounts.get(account_id, ("", ""))[0] != tenant_id:
                if not repository.tenant_exists(session, tenant_id):
                    raise tenant_not_found(tenant_id)
                raise account_not_in_tenant(tenant_id, account_id)
        currency_of = {account_id: currency for account_id, (_, currency) in accounts.items()}
        for draft in drafts:
            check_postings(draft.postings, currency_of)
        written = [unchained(tenant_id, draft, currency_of, chain) for draft in drafts]

        outcome = _ledger_post(
            session, tenant_id, batch_document(involved, expected_balances, written, chain)
        )
        if outcome.status != "posted":
            return Posted(_refused(session, tenant_id, drafts, expected_balances, outcome), {})
        assert outcome.first_seq is not None
        assert outcome.first_prev_hash is not None
        assert outcome.hashes is not None
        seq, prev_hash = outcome.first_seq, outcome.first_prev_hash
        transactions: list[PostedTransaction] = []
        for transaction, hash_ in zip(written, outcome.hashes, strict=True):
            transactions.append(posted(transaction, seq, prev_hash, hash_))
            seq, prev_hash = seq + 1, hash_
        return Posted(transactions, _held(outcome))

    def jsonl_lines(self, session: Session, tenant_id: str, ranges: Sequence[SeqRange]) -> Iterator[str]:
        return jsonl_lines(session, tenant_id, ranges)


def _ledger_post(session: Session, tenant_id: str, batch: Mapping[str, Any]) -> PostOutcome:
    """`batch` is ledger_post()'s one JSON document, encoded by json.dumps in C: as 22 array parameters,
    psycopg's list dumper (in Python) cost more than the rest of the call's client side."""
    return PostOutcome(
        *session.connection().exec_driver_sql(_LEDGER_POST, (tenant_id, json.dumps(batch))).one()
    )


def batch_document(
    account_ids: list[str], expected: Mapping[str, int], written: list[Unchained], chain: int
) -> dict[str, Any]:
    """The document ledger_post() reads (service/pokna/sql/ledger_post.sql): the chain, arrays by column."""
    rows = [transaction.row for transaction in written]
    posting_rows = [
        (index, posting)
        for index, transaction in enumerate(written, start=1)
        for posting in transaction.postings
    ]
    return {
        "chain": chain,
        "accounts": account_ids,
        "expected_ids": list(expected),
        "expected_balances": list(expected.values()),
        "t_id": [row["id"] for row in rows],
        "t_kind": [row["kind"] for row in rows],
        "t_reference": [row["reference"] for row in rows],
        "t_metadata": [json.dumps(row["metadata"]) for row in rows],
        "t_idempotency_key": [row["idempotency_key"] for row in rows],
        "t_request_hash": [row["request_hash"] for row in rows],
        "t_posting_count": [row["posting_count"] for row in rows],
        "t_created_at": [format_timestamp(row["created_at"]) for row in rows],
        "t_before_prev": ["\\x" + transaction.parts[0].hex() for transaction in written],
        "t_before_seq": ["\\x" + transaction.parts[1].hex() for transaction in written],
        "t_rest": ["\\x" + transaction.parts[2].hex() for transaction in written],
        "p_id": [posting["id"] for _, posting in posting_rows],
        "p_transaction": [index for index, _ in posting_rows],
        "p_leg": [posting["leg"] for _, posting in posting_rows],
        "p_account_id": [posting["account_id"] for _, posting in posting_rows],
        "p_amount": [posting["amount"] for _, posting in posting_rows],
        "p_currency": [posting["currency"] for _, posting in posting_rows],
    }


def _held(outcome: PostOutcome) -> dict[str, int]:
    return dict(zip(outcome.held_account_ids or (), outcome.held_balances or (), strict=True))


def _refused(
    session: Session,
    tenant_id: str,
    drafts: Sequence[Draft],
    expected: Mapping[str, int],
    outcome: PostOutcome,
) -> list[PostedTransaction]:
    """What ledger_post() declined to write, as the ledger's typed error (or the originals of a retry)."""
    account_id = str(outcome.refused_account_id)
    if outcome.status == "replay":
        originals = replayed(session, tenant_id, drafts)
        assert originals is not None
        return originals
    if outcome.status == "tenant_not_found":
        raise tenant_not_found(tenant_id)
    if outcome.status == "account_not_found":
        raise account_not_in_tenant(tenant_id, account_id)
    if outcome.status == "balances_changed":
        held = _held(outcome)
        raise BalancesChanged({held_id: held[held_id] for held_id in expected})
    if outcome.status == "balance_out_of_range" and outcome.refused_balance is not None:
        check_new_balance(account_id, outcome.refused_balance)
    if (
        outcome.status == "insufficient_funds"
        and outcome.refused_balance is not None
        and outcome.refused_change is not None
    ):
        raise InsufficientFunds(account_id, outcome.refused_balance, outcome.refused_change)
    raise AssertionError(f"ledger_post() answered {outcome.status!r}")


# --- the JSONL export ----------------------------------------------------------------------------------

# Each transaction's postings come as one flat text array (account_id, amount, currency, ... in leg order):
# ARRAY(subquery) reads them in the index's leg order with no per-transaction sort or aggregate, which
# is most of what json_agg cost.
_JSONL_ROWS = """
    SELECT t.chain, t.seq, t.id, t.kind, t.reference, t.metadata::text,
        to_char(t.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), t.prev_hash, t.hash,
        ARRAY(
            SELECT unnest(ARRAY[p.account_id, p.amount::text, p.currency])
            FROM posting AS p WHERE p.tenant_id = t.tenant_id AND p.transaction_id = t.id ORDER BY p.leg
        )
    FROM journal_transaction AS t
    WHERE t.tenant_id = %(tenant_id)s AND t.chain = %(chain)s AND t.seq BETWEEN %(first)s AND %(last)s
    ORDER BY t.seq
"""

PAGE_TRANSACTIONS = 2000
"""Transactions read per round trip. Each page is read whole before its first line is handed out, so the
session's connection is idle whenever the caller holds a line: an audit bundle reads the accounts and games
a page touches between lines (an open stream on the same connection would block that query forever: psycopg
holds the connection's lock until a stream ends)."""


def jsonl_lines(session: Session, tenant_id: str, ranges: Sequence[SeqRange]) -> Iterator[str]:
    """The layout of json_build_object and json_agg: `"key" : value`, items joined by `, `. The lines are
    byte for byte what json_build_object made of the same fields, written here from raw columns (a test
    holds the values equal to the journal's rows read through the ORM-free repository). Each line names its
    chain first (`"chain" : 0` too), then the fields as before there were chains.

    Read range by range (one chain each, in the order given: pokna.ledger.export gives them by ascending
    chain), and page by page by seq within a chain (a chain's seqs are dense: it has no gaps), so memory
    holds one page and the caller may use the session between any two lines; leaving early leaves no
    query running.

    Strings go through the standard library's C JSON string encoder, which escapes exactly what
    PostgreSQL's escape_json does (quote, backslash, b f n r t, other controls as lower-case u00xx);
    metadata is the stored JSON text, as json_build_object embeds it.
    """
    quote = encode_basestring
    tenant = quote(tenant_id)
    for seqs in ranges:
        for first in range(seqs.first, seqs.last + 1, PAGE_TRANSACTIONS):
            params = {
                "tenant_id": tenant_id,
                "chain": seqs.chain,
                "first": first,
                "last": min(first + PAGE_TRANSACTIONS - 1, seqs.last),
            }
            # Asked of the session for every page: the caller may have ended its transaction between two
            # lines, and then the connection the last page came through is no longer this session's.
            connection = session.connection().connection.driver_connection
            if not isinstance(connection, psycopg.Connection):
                raise TypeError(f"the PostgreSQL export needs psycopg 3, not {type(connection).__name__}")
            with connection.cursor() as cursor:
                page = cursor.execute(_JSONL_ROWS, params).fetchall()
            for chain, seq, id_, kind, reference, metadata, created_at, prev_hash, hash_, legs in page:
                postings = ", ".join(
                    f'{{"account_id" : {quote(legs[index])}, "amount" : {legs[index + 1]}, '
                    f'"currency" : {quote(legs[index + 2])}}}'
                    for index in range(0, len(legs), 3)
                )
                yield (
                    f'{{"chain" : {chain}, "seq" : {seq}, "id" : {quote(id_)}, "tenant_id" : {tenant}, '
                    f'"kind" : {quote(kind)}, '
                    f'"reference" : {"null" if reference is None else quote(reference)}, '
                    f'"metadata" : {metadata}, "created_at" : {quote(created_at)}, "postings" : [{postings}], '
                    f'"prev_hash" : {quote(prev_hash)}, "hash" : {quote(hash_)}}}\n'
                )
