"""Wallets and the ledger over REST."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from pokna.api.schemas.common import Amount, Currency, NoNul

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
                    "created_at": "2026-11-29T23:13:18.768380+00:00",
                }
            ]
        }
    )

    id: str
    object: Literal["account"]
    kind: str = Field(description="player_wallet, game_pot, house or external_funding.")
    external_id: str | None
    currency: str
    balance: int = Field(description="Minor units; never below zero for wallets and pots.")
    created_at: datetime


class MoneyMovement(BaseModel):
    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [{"amount": 500, "reference": "psp-charge-7781"}]}
    )

    amount: Amount
    reference: Text | None = Field(
        default=None, description="Your reference, e.g. the payment provider's id."
    )
    metadata: dict[Annotated[str, NoNul], Annotated[str, StringConstraints(max_length=200), NoNul]] | None = (
        Field(
            default=None,
            max_length=20,
            description="Up to 20 string values, kept with the journal transaction.",
        )
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
                    "created_at": "2026-11-29T23:13:18.768380+00:00",
                    "balance": 100,
                }
            ]
        }
    )

    id: str
    object: Literal["journal_transaction"]
    seq: int = Field(description="Per-tenant sequence number, gap-free.")
    kind: str
    reference: str | None
    metadata: dict[str, Any]
    postings: list[PostingOut]
    prev_hash: str
    hash: str
    created_at: datetime
    balance: int | None = Field(
        default=None, description="The wallet's balance right after this transaction."
    )


class AccountEntryOut(BaseModel):
    transaction_id: str
    seq: int
    kind: str
    reference: str | None
    amount: int = Field(description="Signed: what this transaction did to this account.")
    currency: str
    created_at: datetime


class TrialBalanceLine(BaseModel):
    account_id: str
    kind: str
    external_id: str | None
    balance: int


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
                        },
                        {
                            "account_id": "acct_6e3d…",
                            "kind": "player_wallet",
                            "external_id": "jabba",
                            "balance": 110,
                        },
                        {
                            "account_id": "acct_c009…",
                            "kind": "external_funding",
                            "external_id": "CREDIT",
                            "balance": -200,
                        },
                        {
                            "account_id": "acct_f01e…",
                            "kind": "game_pot",
                            "external_id": "game_69c5…",
                            "balance": 0,
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


class CheckpointOut(BaseModel):
    type: str
    tenant_id: str
    seq: int
    hash: str
    created_at: str
    key_id: str
    signature: str
