"""The ledger's pure checks of a journal transaction, made before any lock is taken on every posting
document it writes (a game's transfers: pokna.ledger.posting_batch.transfer_batch; a deposit or withdrawal: pokna.ledger.moving).
No database: what a client cannot send (legs of its own choosing) is refused here all the same."""

from __future__ import annotations

import pytest

from pokna.ledger import AmountOutOfRange, InvalidPostings, Posting, UnbalancedTransaction
from pokna.ledger.drafts import draft_of
from pokna.ledger.model import check_postings

CREDIT = {"acct_house": "CREDIT", "acct_funding": "CREDIT"}


@pytest.mark.parametrize(
    ("amounts", "error"),
    [
        ((10, -9), UnbalancedTransaction),
        ((10,), InvalidPostings),
        ((0, 0), InvalidPostings),
        ((10**15 + 1, -(10**15 + 1)), AmountOutOfRange),
    ],
)
def test_malformed_postings_are_refused(amounts: tuple[int, ...], error: type[Exception]) -> None:
    postings = [Posting(account, amount) for account, amount in zip(CREDIT, amounts, strict=False)]
    with pytest.raises(error):
        check_postings(postings, CREDIT)


def test_other_refusals() -> None:
    with pytest.raises(InvalidPostings, match="twice"):
        check_postings([Posting("acct_house", 5), Posting("acct_house", -5)], CREDIT)
    with pytest.raises(InvalidPostings, match="kind"):
        draft_of("bribe", [Posting("acct_house", 5), Posting("acct_funding", -5)], None, None)
    with pytest.raises(InvalidPostings, match="integer"):
        draft_of("adjustment", [Posting("acct_house", True), Posting("acct_funding", -1)], None, None)
    with pytest.raises(InvalidPostings, match="float"):
        draft_of(
            "adjustment",
            [Posting("acct_house", 1), Posting("acct_funding", -1)],
            None,
            {"rate": 0.5},
        )
    with pytest.raises(InvalidPostings, match="NUL"):
        draft_of("deposit", [Posting("acct_house", 1), Posting("acct_funding", -1)], "a\x00b", None)


def test_each_currency_must_balance_on_its_own() -> None:
    currency_of = {
        "acct_c_house": "CREDIT",
        "acct_c_funding": "CREDIT",
        "acct_p_house": "PEGGAT",
        "acct_p_funding": "PEGGAT",
    }
    with pytest.raises(UnbalancedTransaction) as raised:
        check_postings([Posting("acct_c_house", 5), Posting("acct_p_funding", -5)], currency_of)
    assert raised.value.extensions["totals"] == {"CREDIT": 5, "PEGGAT": -5}
    check_postings(
        [
            Posting("acct_c_house", 5),
            Posting("acct_c_funding", -5),
            Posting("acct_p_house", 7),
            Posting("acct_p_funding", -7),
        ],
        currency_of,
    )


def test_a_posting_naming_another_currency_than_its_accounts_is_refused() -> None:
    with pytest.raises(InvalidPostings, match="holds CREDIT"):
        check_postings([Posting("acct_house", 5, "PEGGAT"), Posting("acct_funding", -5, "PEGGAT")], CREDIT)
    check_postings([Posting("acct_house", 5, "CREDIT"), Posting("acct_funding", -5)], CREDIT)
