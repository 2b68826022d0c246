"""Wallets and the ledger over REST: each answer is built here, once, from what pokna.ledger returns.

The ledger's own records (AccountRecord, PostedTransaction, AccountEntry, TrialBalance, Checkpoint) stay the
ledger's: the dealer and the CLI read them too, and they carry what the API does not send (tenant ids).
These models are the documented contract, with its examples.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from fastapi import Query
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints
from pydantic_core import PydanticCustomError

from pokna.api.fields import SEQ_MAX, Amount, Currency, NoNul
from pokna.ledger import (
    AccountEntry,
    AccountKind,
    AccountRecord,
    Checkpoint,
    PostedTransaction,
    TransactionKind,
    TrialBalance,
    checkpoint_document,
)
from pokna.ledger.errors import InvalidPostings
from pokna.ledger.model import MAX_METADATA_BYTES, check_metadata
from pokna.paging import Page
from pokna_verify.ledger.chain import LEDGER_CHAINS

# A range of the journal, as the export and the audit bundle take it: one chain, or positions on one.
ChainParam = Annotated[
    int | None, Query(ge=0, le=LEDGER_CHAINS - 1, description="Only this chain (default: every chain).")
]
FromSeqParam = Annotated[
    int | None,
    Query(ge=1, le=SEQ_MAX, description="First sequence number on `chain` (give `chain` with it)."),
]
ToSeqParam = Annotated[
    int | None,
    Query(ge=1, le=SEQ_MAX, description="Last sequence number on `chain` (give `chain` with it)."),
]

Text = Annotated[str, StringConstraints(min_length=1, max_length=200), NoNul]


class AccountCreate(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"external_id": "user-42"}]})

    external_id: Text | None = Field(default=None, description="Your app's own user id; unique per tenant.")
    currency: Currency = "CREDIT"


class AccountOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "id": "acct_54e6013c41a8477bb55a3ee6bcf51f63",
                    "object": "account",
                    "kind": "player_wallet",
                    "external_id": "han",
                    "currency": "CREDIT",
                    "balance": 90,
                    "created_at": "2026-11-29T23:13:18.768380Z",
                }
            ]
        }
    )

    id: str
    object: Literal["account"]
    kind: AccountKind = Field(description="What the account is for.")
    external_id: str | None
    currency: str
    balance: int = Field(description="Minor units; never below zero for wallets and pots.")
    created_at: datetime

    @classmethod
    def of(cls, account: AccountRecord) -> AccountOut:
        return cls(
            id=account.id,
            object="account",
            kind=account.kind,
            external_id=account.external_id,
            currency=account.currency,
            balance=account.balance,
            created_at=account.created_at,
        )


def _fits_the_journal(metadata: dict[str, str] | None) -> dict[str, str] | None:
    """The journal holds metadata up to a size (it is hashed into the chain), which 20 values of 200
    characters can pass: refused here as bad input naming the field, not by the posting."""
    if metadata is not None:
        try:
            check_metadata(metadata)
        except InvalidPostings as refusal:
            raise PydanticCustomError("metadata_size", str(refusal)) from None
    return metadata


class MoneyMovement(BaseModel):
    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [{"amount": 500, "reference": "psp-charge-7781"}]}
    )

    amount: Amount
    reference: Text | None = Field(
        default=None, description="Your reference, e.g. the payment provider's id."
    )
    metadata: Annotated[
        dict[Annotated[str, NoNul], Annotated[str, StringConstraints(max_length=200), NoNul]] | None,
        AfterValidator(_fits_the_journal),
    ] = Field(
        default=None,
        max_length=20,
        description=f"Up to 20 string values, kept with the journal transaction: at most {MAX_METADATA_BYTES} "
        "bytes as canonical JSON (RFC 8785, UTF-8), names and all.",
    )


class PostingOut(BaseModel):
    account_id: str
    amount: int
    currency: str


class JournalTransactionOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "id": "txn_29317f729f134c1d9f81933da7aefc7b",
                    "object": "journal_transaction",
                    "chain": 5,
                    "seq": 1,
                    "kind": "deposit",
                    "reference": "psp-charge-7781",
                    "metadata": {},
                    "postings": [
                        {"account_id": "acct_6e3d…", "amount": 100, "currency": "CREDIT"},
                        {"account_id": "acct_c009…", "amount": -100, "currency": "CREDIT"},
                    ],
                    "prev_hash": "0" * 64,
                    "hash": "34136affb4d34210084b7fc3459f696170ad88cdc38cdb55c00a5b6169606f25",
                    "created_at": "2026-11-29T23:13:18.768380Z",
                    "balance": 100,
                }
            ]
        }
    )

    id: str
    object: Literal["journal_transaction"]
    chain: int = Field(
        description="Which of the tenant's hash chains it is on (0-15; a wallet's deposits and withdrawals "
        "are on the wallet's, a game's transfers on the game's): docs/ledger.md."
    )
    seq: int = Field(description="Its sequence number on that chain: gap-free per chain.")
    kind: TransactionKind = Field(description="What moved the money.")
    reference: str | None
    metadata: dict[str, str] = Field(
        description="Strings by name: what the request gave (`metadata`), or the service's own (`game_id`)."
    )
    postings: list[PostingOut]
    prev_hash: str
    hash: str
    created_at: datetime
    balance: int | None = Field(
        default=None, description="The wallet's balance right after this transaction."
    )

    @classmethod
    def of(cls, transaction: PostedTransaction, *, balance: int | None) -> JournalTransactionOut:
        return cls(
            id=transaction.id,
            object="journal_transaction",
            chain=transaction.chain,
            seq=transaction.seq,
            kind=transaction.kind,
            reference=transaction.reference,
            metadata=transaction.metadata,
            # A posted leg always carries its account's currency: validated here, not assumed.
            postings=[
                PostingOut.model_validate(posting, from_attributes=True) for posting in transaction.postings
            ],
            prev_hash=transaction.prev_hash,
            hash=transaction.hash,
            created_at=transaction.created_at,
            balance=balance,
        )


class AccountEntryOut(BaseModel):
    transaction_id: str
    chain: int
    seq: int
    kind: TransactionKind = Field(description="What moved the money.")
    reference: str | None
    amount: int = Field(description="Signed: what this transaction did to this account.")
    currency: str
    created_at: datetime

    @classmethod
    def of_page(cls, page: Page[AccountEntry]) -> Page[AccountEntryOut]:
        return Page[AccountEntryOut](
            data=[cls.model_validate(entry, from_attributes=True) for entry in page.data],
            has_more=page.has_more,
            next_cursor=page.next_cursor,
        )


class AccountPartOut(BaseModel):
    """One chain's part of an account the ledger keeps one per chain (docs/ledger.md, "Chains")."""

    chain: int = Field(description="The journal chain whose postings this part takes.")
    account_id: str = Field(description="The part's own account id, as postings on that chain name it.")
    balance: int


class TrialBalanceLine(BaseModel):
    account_id: str = Field(
        description="The account's id; for an account kept in per-chain parts, its first part's."
    )
    kind: AccountKind = Field(description="What the account is for.")
    external_id: str | None
    balance: int = Field(description="Minor units; for an account kept in parts, theirs together.")
    parts: list[AccountPartOut] = Field(
        description="The external funding and revenue accounts are kept one part per journal chain, so that "
        "postings on different chains never wait for each other: each part, by chain, whose balances add "
        "up to `balance`. Empty for every other account."
    )


class TrialBalanceOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "currency": "CREDIT",
                    "accounts": [
                        {
                            "account_id": "acct_54e6…",
                            "kind": "player_wallet",
                            "external_id": "han",
                            "balance": 90,
                            "parts": [],
                        },
                        {
                            "account_id": "acct_6e3d…",
                            "kind": "player_wallet",
                            "external_id": "jabba",
                            "balance": 110,
                            "parts": [],
                        },
                        {
                            "account_id": "acct_c009…",
                            "kind": "external_funding",
                            "external_id": "CREDIT",
                            "balance": -200,
                            "parts": [
                                {"chain": 2, "account_id": "acct_c009…", "balance": -90},
                                {"chain": 6, "account_id": "acct_d17a…", "balance": -110},
                            ],
                        },
                        {
                            "account_id": "acct_f01e…",
                            "kind": "game_pot",
                            "external_id": "game_69c5…",
                            "balance": 0,
                            "parts": [],
                        },
                    ],
                    "total": 0,
                }
            ]
        }
    )

    currency: str
    accounts: list[TrialBalanceLine]
    total: int = Field(description="Always zero when the books are sound.")

    @classmethod
    def of(cls, trial: TrialBalance) -> TrialBalanceOut:
        return cls(
            currency=trial.currency,
            accounts=[
                TrialBalanceLine(
                    account_id=line.account_id,
                    kind=line.kind,
                    external_id=line.external_id,
                    balance=line.balance,
                    parts=[
                        AccountPartOut(chain=chain, account_id=part.account_id, balance=part.balance)
                        for chain, part in line.parts
                    ],
                )
                for line in trial.chart()
            ],
            total=trial.total,
        )


class ChainHeadOut(BaseModel):
    chain: int
    seq: int
    hash: str


class CheckpointOut(BaseModel):
    type: str
    tenant_id: str
    seq: int = Field(description="Chain 0's head (what a checkpoint signed before there were chains).")
    hash: str
    heads: list[ChainHeadOut] | None = Field(
        default=None,
        description="Every chain's head that has a transaction, ascending by chain; absent from a checkpoint "
        "taken before there were chains (which pins chain 0 alone: the answer leaves out what was not signed).",
    )
    created_at: str
    key_id: str
    signature: str

    @classmethod
    def of(cls, checkpoint: Checkpoint) -> CheckpointOut:
        """The signed document exactly as signed: what an auditor checks with the public key."""
        return cls.model_validate(checkpoint_document(checkpoint))
