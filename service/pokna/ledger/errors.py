"""Typed ledger errors. Each is a PoknaError, so the API turns it into problem+json with a stable code."""

from __future__ import annotations

from pokna.errors import Conflict, NotFound, PoknaError


class LedgerError(PoknaError):
    code = "ledger_error"
    status = 422
    title = "Ledger request refused"


class InsufficientFunds(Conflict):
    """Posting would take a wallet or pot below zero. Nothing was posted."""

    code = "insufficient_funds"
    status = 409
    title = "Insufficient funds"

    def __init__(self, account_id: str, balance: int, change: int) -> None:
        super().__init__(
            f"account {account_id} holds {balance}; a change of {change} would take it below zero",
            account_id=account_id,
            balance=balance,
            change=change,
        )
        self.account_id = account_id


class UnbalancedTransaction(LedgerError):
    code = "unbalanced_transaction"
    title = "Postings do not balance"


class InvalidPostings(LedgerError):
    """Malformed postings: too few, zero or out-of-range amounts, an account twice, a foreign tenant..."""

    code = "invalid_postings"
    title = "Invalid postings"


class AmountOutOfRange(LedgerError):
    code = "amount_out_of_range"
    title = "Amount out of range"


class InvalidAccount(LedgerError):
    code = "invalid_account"
    title = "Invalid account"


class AccountNotFound(NotFound):
    code = "account_not_found"
    title = "Account not found"


class TenantNotFound(NotFound):
    code = "tenant_not_found"
    title = "Tenant not found"


class TransactionNotFound(NotFound):
    code = "transaction_not_found"
    title = "Journal transaction not found"


class AccountExists(Conflict):
    code = "account_exists"
    title = "Account already exists"
