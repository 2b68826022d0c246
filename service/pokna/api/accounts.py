"""Wallets, money in and out, and the tenant's books over REST."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query
from fastapi.responses import JSONResponse, StreamingResponse
from sqlalchemy.orm import Session

from pokna import ledger
from pokna.api.auth import TenantDep
from pokna.api.deps import RuntimeDep, SessionDep
from pokna.api.idempotency import IdempotencyDep
from pokna.api.pagination import Page, PageDep
from pokna.api.problems import problem_responses
from pokna.api.schemas.accounts import (
    AccountCreate,
    AccountEntryOut,
    AccountOut,
    CheckpointOut,
    JournalTransactionOut,
    MoneyMovement,
    TrialBalanceOut,
)
from pokna.api.schemas.common import SEQ_MAX, Currency, NoNul
from pokna.errors import InvalidRequest
from pokna.ledger import AccountKind, TransactionNotFound

router = APIRouter(prefix="/v1", tags=["accounts"])

AccountId = Annotated[str, Path(max_length=40, description="The account's id (`acct_...`)."), NoNul]
EXPORT_MEDIA = {"jsonl": "application/x-ndjson", "csv": "text/csv", "beancount": "text/plain"}


@router.post(
    "/accounts",
    status_code=201,
    response_model=AccountOut,
    summary="Open a player wallet",
    responses=problem_responses(401, 409, 422),
)
def open_wallet(body: AccountCreate, tenant_id: TenantDep, idempotency: IdempotencyDep) -> JSONResponse:
    def work(session: Session) -> tuple[int, Any]:
        account = ledger.open_account(
            session,
            tenant_id=tenant_id,
            kind=AccountKind.PLAYER_WALLET,
            currency=body.currency,
            external_id=body.external_id,
        )
        return 201, AccountOut.of(account)

    return idempotency.run(work)


@router.get(
    "/accounts/{account_id}",
    response_model=AccountOut,
    summary="An account and its balance",
    responses=problem_responses(401, 404),
)
def get_account(account_id: AccountId, tenant_id: TenantDep, session: SessionDep) -> AccountOut:
    return AccountOut.of(ledger.get_account(session, account_id, tenant_id=tenant_id))


@router.get(
    "/accounts/{account_id}/transactions",
    response_model=Page[AccountEntryOut],
    summary="The account's postings, newest first",
    responses=problem_responses(401, 404, 422),
)
def account_transactions(
    account_id: AccountId, page: PageDep, tenant_id: TenantDep, session: SessionDep
) -> Page[AccountEntryOut]:
    try:
        entries = ledger.transactions_of(
            session, account_id, tenant_id=tenant_id, limit=page.limit, starting_after=page.starting_after
        )
    except TransactionNotFound:
        raise InvalidRequest("not a cursor from this list", field="query.starting_after") from None
    return AccountEntryOut.of_page(entries)


def _movement(kind: Literal["deposit", "withdrawal"]) -> Any:
    def move(
        account_id: AccountId, body: MoneyMovement, tenant_id: TenantDep, idempotency: IdempotencyDep
    ) -> JSONResponse:
        post = ledger.deposit if kind == "deposit" else ledger.withdraw

        def work(session: Session) -> tuple[int, Any]:
            account = ledger.get_account(session, account_id, tenant_id=tenant_id)
            if account.kind != AccountKind.PLAYER_WALLET:
                raise InvalidRequest(
                    f"{kind}s go to player wallets, not a {account.kind}", field="path.account_id"
                )
            transaction = post(
                session,
                tenant_id=tenant_id,
                account_id=account_id,
                amount=body.amount,
                reference=body.reference,
                metadata=body.metadata,
            )
            # The wallet stays locked until the commit: its balance now is its balance right after.
            balance = ledger.balance_of(session, account_id)
            return 201, JournalTransactionOut.of(transaction, balance=balance)

        return idempotency.run(work)

    return move


router.add_api_route(
    "/accounts/{account_id}/deposits",
    _movement("deposit"),
    methods=["POST"],
    status_code=201,
    response_model=JournalTransactionOut,
    summary="Credit a wallet from outside (send an Idempotency-Key)",
    responses=problem_responses(401, 404, 409, 422),
)
router.add_api_route(
    "/accounts/{account_id}/withdrawals",
    _movement("withdrawal"),
    methods=["POST"],
    status_code=201,
    response_model=JournalTransactionOut,
    summary="Pay out of a wallet (409 `insufficient_funds` and nothing posted if it would go below zero)",
    responses=problem_responses(401, 404, 409, 422),
)


@router.get(
    "/ledger/trial-balance",
    response_model=TrialBalanceOut,
    tags=["ledger"],
    summary="Every account's balance and their total, which is zero",
    responses=problem_responses(401, 422),
)
def trial_balance(
    tenant_id: TenantDep, session: SessionDep, currency: Currency = "CREDIT"
) -> TrialBalanceOut:
    return TrialBalanceOut.of(ledger.trial_balance(session, tenant_id, currency))


@router.get(
    "/ledger/export",
    tags=["ledger"],
    summary="Stream the journal as JSONL (with hashes), CSV (one row per posting) or Beancount",
    responses={
        200: {
            "content": {media: {"schema": {"type": "string"}} for media in EXPORT_MEDIA.values()},
            "description": "The export, streamed",
        },
        **problem_responses(401, 422),
    },
)
def export(
    tenant_id: TenantDep,
    session: SessionDep,
    export_format: Annotated[Literal["jsonl", "csv", "beancount"], Query(alias="format")] = "jsonl",
    from_seq: Annotated[int | None, Query(ge=1, le=SEQ_MAX)] = None,
    to_seq: Annotated[int | None, Query(ge=1, le=SEQ_MAX)] = None,
) -> StreamingResponse:
    # The request's session outlives this return: its dependency closes it after the response is sent.
    lines = ledger.export_lines(session, tenant_id, export_format, from_seq=from_seq, to_seq=to_seq)
    return StreamingResponse(lines, media_type=EXPORT_MEDIA[export_format])


@router.get(
    "/ledger/checkpoints",
    response_model=list[CheckpointOut],
    tags=["ledger"],
    summary="Signed chain heads, newest first: take one away to pin the ledger's history",
    responses=problem_responses(401),
)
def checkpoints(tenant_id: TenantDep, session: SessionDep) -> list[CheckpointOut]:
    return [CheckpointOut.of(checkpoint) for checkpoint in ledger.list_checkpoints(session, tenant_id)]


@router.post(
    "/ledger/checkpoints",
    status_code=201,
    response_model=CheckpointOut,
    tags=["ledger"],
    summary="Sign the current chain head now",
    responses=problem_responses(401),
)
def new_checkpoint(runtime: RuntimeDep, tenant_id: TenantDep, idempotency: IdempotencyDep) -> JSONResponse:
    def work(session: Session) -> tuple[int, Any]:
        return 201, CheckpointOut.of(ledger.take_checkpoint(session, tenant_id, runtime.keys.signing_key))

    return idempotency.run(work)
