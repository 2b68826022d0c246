"""Double-entry ledger: accounts, a hash-chained journal of balanced transactions, exports and audits.

Read docs/ledger.md for the model, the sign convention and every invariant the database enforces. Other
packages import from here, not from the modules behind it:

- accounts, accounts_aio: open, find and read accounts (`AccountSummary` is what other domains may know
  of one);
- moving: deposits and withdrawals, the one way money enters and leaves a wallet (one ledger_move() call);
  posting_batch: a game step's transfers, posted by the dealer's game_write(); both through ledger_post();
- reads (the API's), export_aio, checkpoint, reconcile: the journal read back, async; the offline check
  is pokna_verify's.
"""

from pokna.ledger.accounts import AccountSummary, system_external_id
from pokna.ledger.audit_reads import (
    JournalRange,
    JournalSpans,
    check_range,
    checkpoints_between,
    journal_span,
    transfers_before,
)
from pokna.ledger.books_repository import check_seq_bounds
from pokna.ledger.checkpoint import Checkpoint, checkpoint_document, oldest_unsigned_at, take_checkpoint_async
from pokna.ledger.errors import (
    AccountExists,
    AmountOutOfRange,
    InsufficientFunds,
    InvalidAccount,
    InvalidPostings,
    TransactionNotFound,
    UnbalancedTransaction,
)
from pokna.ledger.export_aio import EXPORTERS, check_chain
from pokna.ledger.holding import GameAccounts, hold_wallets
from pokna.ledger.model import AccountKind, AccountTransfer, PostedTransaction, Posting, TransactionKind
from pokna.ledger.posting_batch import TransferBatch, transfer_batch
from pokna.ledger.reads import AccountEntry, AccountRecord, TrialBalance
from pokna.ledger.reconcile import reconcile
from pokna.ledger.repository import read_heads_async
from pokna_verify.ledger.chain import LEDGER_CHAINS, chain_for
from pokna_verify.ledger.check import verify_export

__all__ = [
    "EXPORTERS",
    "LEDGER_CHAINS",
    "AccountEntry",
    "AccountExists",
    "AccountKind",
    "AccountRecord",
    "AccountSummary",
    "AccountTransfer",
    "AmountOutOfRange",
    "Checkpoint",
    "GameAccounts",
    "InsufficientFunds",
    "InvalidAccount",
    "InvalidPostings",
    "JournalRange",
    "JournalSpans",
    "PostedTransaction",
    "Posting",
    "TransactionKind",
    "TransactionNotFound",
    "TransferBatch",
    "TrialBalance",
    "UnbalancedTransaction",
    "chain_for",
    "check_chain",
    "check_range",
    "check_seq_bounds",
    "checkpoint_document",
    "checkpoints_between",
    "hold_wallets",
    "journal_span",
    "oldest_unsigned_at",
    "read_heads_async",
    "reconcile",
    "system_external_id",
    "take_checkpoint_async",
    "transfer_batch",
    "transfers_before",
    "verify_export",
]
