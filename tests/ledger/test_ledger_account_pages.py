"""An account's transactions a page at a time (`GET /v1/accounts/{id}/transactions`, pokna.ledger.reads):
a page reads a page whatever the account's history, and paging through the whole history gives every
posting once, in the order the statements of before gave (kept here as the oracle).

Before 0025_posting_created_at a posting had no time of its own: every page read all the account's postings,
looked up each one's transaction, sorted them and kept `limit` (docs/ledger.md, "Reading an account")."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, Engine

from pokna.ledger.reads import ENTRIES, ENTRIES_AFTER, POSITION, entries_page
from support.ledger_history import Books, new_tenant_row, open_books, post_deposits

# The statements of before 0025, the oracle of the order and of the cursor's meaning.
_OLD_POSTINGS = (
    "FROM journal_transaction AS {t} JOIN posting AS {p} "
    "ON {p}.tenant_id = {t}.tenant_id AND {p}.transaction_id = {t}.id "
    "WHERE {t}.tenant_id = %(tenant_id)s AND {p}.account_id = %(account_id)s"
)
OLD_POSITION = (
    "SELECT c.created_at, c.id " + _OLD_POSTINGS.format(t="c", p="cp") + " AND c.id = %(after)s LIMIT 1"
)
_OLD_ENTRIES = (
    "SELECT t.id, t.seq, t.chain, t.kind, t.reference, t.created_at, p.amount, p.currency "
    "FROM posting AS p CROSS JOIN LATERAL (SELECT j.id, j.seq, j.chain, j.kind, j.reference, j.created_at "
    "FROM journal_transaction AS j WHERE j.tenant_id = %(tenant_id)s AND j.id = p.transaction_id LIMIT 1) AS t "
    "WHERE p.tenant_id = %(tenant_id)s AND p.account_id = %(account_id)s"
)
_OLD_NEWEST_FIRST = " ORDER BY t.created_at DESC, t.id DESC LIMIT %(limit)s"
OLD_ENTRIES = _OLD_ENTRIES + _OLD_NEWEST_FIRST
OLD_ENTRIES_AFTER = _OLD_ENTRIES + f" AND (t.created_at, t.id) < ({OLD_POSITION})" + _OLD_NEWEST_FIRST

PAGE = 10
Row = tuple[Any, ...]


def _rows(connection: Connection, statement: str, books: Books, account: str, **values: Any) -> list[Row]:
    found = connection.exec_driver_sql(
        statement, {"tenant_id": books.tenant_id, "account_id": account, **values}
    )
    return [tuple(row) for row in found.all()]


def _plan(
    connection: Connection, statement: str, books: Books, account: str, **values: Any
) -> dict[str, Any]:
    (document,) = _rows(
        connection, "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + statement, books, account, **values
    )
    plan: dict[str, Any] = document[0][0]["Plan"]
    return plan


def _rows_read(node: dict[str, Any], relation: str) -> int:
    """Rows the plan's scans of `relation` read: those they returned and those their filters removed."""
    own = 0
    if node.get("Relation Name") == relation:
        read = (
            node["Actual Rows"]
            + node.get("Rows Removed by Filter", 0)
            + node.get("Rows Removed by Index Recheck", 0)
        )
        own = read * node["Actual Loops"]
    return own + sum(_rows_read(child, relation) for child in node.get("Plans", []))


def _cost(connection: Connection, books: Books, account: str, after: str | None) -> tuple[int, int, int]:
    """(posting rows read, journal rows read, shared buffers touched) of a page of PAGE (+1, as the service
    asks) from the top or after `after`."""
    statement, values = (ENTRIES, {}) if after is None else (ENTRIES_AFTER, {"after": after})
    plan = _plan(connection, statement, books, account, limit=PAGE + 1, **values)
    buffers = plan["Shared Hit Blocks"] + plan["Shared Read Blocks"]
    return _rows_read(plan, "posting"), _rows_read(plan, "journal_transaction"), buffers


def _costs(engine: Engine, books: Books) -> dict[tuple[str, bool], tuple[int, int, int]]:
    """Each account's page from the top and after the 50th newest transaction, with fresh statistics."""
    costs = {}
    with engine.connect() as connection:
        connection.exec_driver_sql("ANALYZE posting")
        connection.exec_driver_sql("ANALYZE journal_transaction")
        for account in (books.funding, books.wallets[0]):
            fiftieth = _rows(connection, OLD_ENTRIES, books, account, limit=50)[-1][0]
            costs[(account, False)] = _cost(connection, books, account, None)
            costs[(account, True)] = _cost(connection, books, account, fiftieth)
    return costs


def test_a_page_reads_a_page_whatever_the_accounts_history(engine: Engine) -> None:
    """The same rows at 300 postings on the account as at 3,000 (1,500 on the wallet), and the buffers of
    an index one level deeper at most."""
    books = open_books(engine, new_tenant_row(engine))
    post_deposits(engine, books, 300, seed=1)
    small = _costs(engine, books)
    post_deposits(engine, books, 2700, seed=2)
    large = _costs(engine, books)
    for page, (postings, journal, buffers) in large.items():
        small_postings, small_journal, small_buffers = small[page]
        # The page and its cursor's posting (looked up by its transaction: a leg or two).
        assert postings <= PAGE + 1 + 2, (page, large[page])
        assert journal == PAGE + 1, (page, large[page])
        assert (postings, journal) == (small_postings, small_journal), (page, small[page], large[page])
        assert buffers <= small_buffers + 4, (page, small[page], large[page])


def _paged(
    connection: Connection, books: Books, account: str, limit: int, statements: Sequence[str]
) -> list[list[Row]]:
    """Every page of the account at `limit`, as account_entries reads them (`limit + 1` rows, the cursor the
    last transaction's id), with (ENTRIES, ENTRIES_AFTER, POSITION) or the old ones."""
    entries, entries_after, position = statements
    pages: list[list[Row]] = []
    after: str | None = None
    while True:
        if after is None:
            rows = _rows(connection, entries, books, account, limit=limit + 1)
        else:
            assert _rows(connection, position, books, account, after=after), after
            rows = _rows(connection, entries_after, books, account, limit=limit + 1, after=after)
        page = entries_page(rows, limit)
        pages.append(rows[:limit])
        assert len(page.data) == limit or not page.has_more
        if page.next_cursor is None:
            return pages
        after = page.next_cursor


NEW = (ENTRIES, ENTRIES_AFTER, POSITION)
OLD = (OLD_ENTRIES, OLD_ENTRIES_AFTER, OLD_POSITION)


def test_paging_the_whole_history_gives_every_posting_once_in_the_order_of_before(engine: Engine) -> None:
    """At limits 1, 7, 100 and 500, on an account of 3,000 postings and one of 1,500, where a third of the
    transactions share their second with others (ties broken by id) and time does not follow seq."""
    books = open_books(engine, new_tenant_row(engine))
    post_deposits(engine, books, 3000, seed=3)
    with engine.connect() as connection:
        for account, count in ((books.funding, 3000), (books.wallets[0], 1500)):
            oracle = _rows(connection, OLD_ENTRIES, books, account, limit=10**6)
            assert len(oracle) == count
            assert len({row[0] for row in oracle}) == count
            for limit in (1, 7, 100, 500):
                pages = _paged(connection, books, account, limit, NEW)
                assert [row for page in pages for row in page] == oracle, limit
                if limit >= 100:  # the old statements page in O(history) a page: only where that is quick
                    assert pages == _paged(connection, books, account, limit, OLD), limit
        # A cursor of another account's list is no cursor here, as before.
        other = _rows(connection, OLD_ENTRIES, books, books.wallets[1], limit=1)[0][0]
        for position, entries_after in ((POSITION, ENTRIES_AFTER), (OLD_POSITION, OLD_ENTRIES_AFTER)):
            assert _rows(connection, position, books, books.wallets[0], after=other) == []
            assert _rows(connection, entries_after, books, books.wallets[0], limit=PAGE, after=other) == []
