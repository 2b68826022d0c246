"""The ledger's words against the game's: one concept, one name, and the shared kinds agree."""

from __future__ import annotations

from pokna.ledger import AccountTransfer, Posting, TransactionKind
from pokna_verify.game.transfers import TransferKind


def test_every_kind_of_game_transfer_is_a_kind_of_journal_transaction() -> None:
    """The rules may not import the ledger, so the two enums are kept apart; the dealer posts a
    TransferKind's value as the TransactionKind of the same value."""
    for kind in TransferKind:
        assert TransactionKind(kind.value).value == kind.value


def test_an_account_transfer_is_two_legs_that_balance() -> None:
    payer, payee = AccountTransfer("ante", "acct_payer", "acct_pot", 7).postings()
    assert (payer, payee) == (Posting("acct_payer", -7), Posting("acct_pot", 7))
    assert payer.currency is None  # a requested leg is in its account's currency
