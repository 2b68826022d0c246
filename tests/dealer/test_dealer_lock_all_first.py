"""A game request of several posting steps locks every account it posts to at its first posting, in one
ascending statement (pokna.dealer.writes): with a head per chain, a later step taking the revenue account
after the first step's wallets could deadlock with a posting on another chain."""

from __future__ import annotations

from pokna.dealer.writes import GameStep, locking_all_first
from pokna.ledger.posting_batch import PostingBatch


def _step(game: str, accounts: list[str] | None) -> GameStep:
    batch = None if accounts is None else PostingBatch(3, tuple(accounts), {}, ())
    return GameStep(game, 1, {}, [], [], (), [], batch)


def test_the_first_posting_step_locks_every_account_of_the_request() -> None:
    steps = [
        _step("g", None),
        _step("g", ["acct_b", "acct_d"]),
        _step("g", None),
        _step("g", ["acct_a", "acct_d"]),
    ]
    locked = locking_all_first(steps)
    assert [step.batch and step.batch.accounts for step in locked] == [
        None,
        ("acct_a", "acct_b", "acct_d"),
        None,
        ("acct_a", "acct_d"),
    ]
    assert steps[1].batch is not None
    assert steps[1].batch.accounts == ("acct_b", "acct_d")  # the request's own steps are left as built


def test_one_posting_step_is_sent_as_built() -> None:
    steps = [_step("g", None), _step("g", ["acct_b", "acct_a"])]
    assert locking_all_first(steps) is steps
