"""Wallets, money in and out, and the tenant's books over REST: each request on one connection (opening a
wallet and taking a checkpoint in the keyed transaction, pokna.api.keyed_writes); the export streams in one
read transaction."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query, Request, Response
from fastapi.responses import StreamingResponse

from pokna import ledger
from pokna.api.auth import ApiKeyDigestDep, StreamingTenantDep
from pokna.api.deps import driver_connection, runtime_of
from pokna.api.direct_route import DirectRoute
from pokna.api.fields import Currency, NoNul
from pokna.api.idempotency import REPLAYED_HEADER, REQUIRED_KEY_EXTRA, RequiredSentKeyDep, key_required
from pokna.api.keyed_writes import KeyedWriteDep
from pokna.api.pagination import Page, PageDep
from pokna.api.problem_docs import (
    BAD_CURSOR,
    IDEMPOTENT,
    JSON_BODY,
    KEY_REQUIRED,
    KEYED,
    VALIDATION,
    problems,
)
from pokna.errors import InvalidRequest
from pokna.idempotency.keyed import Transaction
from pokna.ledger import TransactionNotFound, accounts_aio, checkpoint, moving, reads
from pokna.ledger.problem_docs import (
    ACCOUNT_EXISTS,
    ACCOUNT_NOT_FOUND,
    INSUFFICIENT_FUNDS,
    NOT_A_WALLET,
    SEQ_WITHOUT_CHAIN,
    WALLET_HELD,
)
from pokna.ledger.schemas import (
    AccountCreate,
    AccountEntryOut,
    AccountOut,
    ChainParam,
    CheckpointOut,
    FromSeqParam,
    JournalTransactionOut,
    MoneyMovement,
    ToSeqParam,
    TrialBalanceOut,
)
from pokna.tenants.authentication import authenticate

router = APIRouter(prefix="/v1", route_class=DirectRoute)

AccountId = Annotated[str, Path(max_length=40, description="The account's id (`acct_...`)."), NoNul]
EXPORT_MEDIA = {"jsonl": "application/x-ndjson", "csv": "text/csv", "beancount": "text/plain"}
MOVEMENT_PROBLEMS = (KEYED, JSON_BODY, KEY_REQUIRED, IDEMPOTENT, ACCOUNT_NOT_FOUND, NOT_A_WALLET)


@router.post(
    "/accounts",
    status_code=201,
    response_model=AccountOut,
    tags=["accounts"],
    summary="Open a player wallet",
    description="A wallet of one currency with balance 0, for one of your players. `external_id` (your own "
    "id for the player) is unique per tenant: a second wallet for it is 409 `account_exists`.",
    responses=problems(KEYED, JSON_BODY, IDEMPOTENT, ACCOUNT_EXISTS),
)
async def open_wallet(body: AccountCreate, write: KeyedWriteDep) -> AccountOut:
    async def work(opened: Transaction) -> AccountOut:
        return AccountOut.of(await accounts_aio.open_wallet(opened, body.currency, body.external_id))

    return await write(AccountOut, work, status=201, refusals=accounts_aio.wallet_refusals(body.external_id))


@router.get(
    "/accounts/{account_id}",
    response_model=AccountOut,
    tags=["accounts"],
    summary="An account and its balance",
    description="Any of your accounts: a player wallet, a game's pot, the house or the funding account.",
    responses=problems(KEYED, VALIDATION, ACCOUNT_NOT_FOUND),
)
async def get_account(account_id: AccountId, request: Request, api_key_digest: ApiKeyDigestDep) -> AccountOut:
    async with driver_connection(request) as connection:
        return AccountOut.of(await reads.read_account(connection, api_key_digest, account_id))


@router.get(
    "/accounts/{account_id}/transactions",
    response_model=Page[AccountEntryOut],
    tags=["accounts"],
    summary="The account's postings, newest first",
    description="One entry per posting on this account, with the balance right after it. Page with "
    "`limit` and `starting_after` (the previous page's `next_cursor`).",
    responses=problems(KEYED, VALIDATION, ACCOUNT_NOT_FOUND, BAD_CURSOR),
)
async def account_transactions(
    account_id: AccountId, page: PageDep, request: Request, api_key_digest: ApiKeyDigestDep
) -> Page[AccountEntryOut]:
    try:
        async with driver_connection(request) as connection:
            entries = await reads.account_entries(
                connection, api_key_digest, account_id, limit=page.limit, after=page.starting_after
            )
    except TransactionNotFound:
        raise InvalidRequest("not a cursor from this list", field="query.starting_after") from None
    return AccountEntryOut.of_page(entries)


def _movement(kind: Literal["deposit", "withdrawal"]) -> Any:
    async def move(
        account_id: AccountId,
        body: MoneyMovement,
        request: Request,
        api_key_digest: ApiKeyDigestDep,
        sent_key: RequiredSentKeyDep,
    ) -> Response:
        """The answer is the bytes ledger_move() filled in and stored for replay (pokna.ledger.moving)."""
        movement = moving.Movement(kind, account_id, body.amount, body.reference, body.metadata)
        async with driver_connection(request) as connection:
            if sent_key is None:  # the API key is checked first, as on every route
                await authenticate(connection, api_key_digest)
                raise key_required()
            moved = await moving.move(
                connection, api_key_digest, sent_key.key, sent_key.fingerprint, movement
            )
        headers = {REPLAYED_HEADER: "true"} if moved.replayed else None
        return Response(moved.body, status_code=moved.status, media_type="application/json", headers=headers)

    return move


router.add_api_route(
    "/accounts/{account_id}/deposits",
    _movement("deposit"),
    name="deposit",
    methods=["POST"],
    status_code=201,
    response_model=JournalTransactionOut,
    tags=["accounts"],
    summary="Credit a wallet from outside (an Idempotency-Key is required)",
    description="Money in: the tenant's funding account pays the wallet. The `Idempotency-Key` header is "
    "required, so that a retry after a lost answer cannot credit twice: without one the request is 400 "
    "`idempotency_key_required` and nothing is posted.",
    responses=problems(*MOVEMENT_PROBLEMS),
    openapi_extra=REQUIRED_KEY_EXTRA,
)
router.add_api_route(
    "/accounts/{account_id}/withdrawals",
    _movement("withdrawal"),
    name="withdraw",
    methods=["POST"],
    status_code=201,
    response_model=JournalTransactionOut,
    tags=["accounts"],
    summary="Pay out of a wallet (409 `insufficient_funds` and nothing posted if it would go below zero)",
    description="Money out: the wallet pays the tenant's funding account. The `Idempotency-Key` header is "
    "required, so that a retry after a lost answer cannot pay out twice: without one the request is 400 "
    "`idempotency_key_required` and nothing is posted.",
    responses=problems(*MOVEMENT_PROBLEMS, INSUFFICIENT_FUNDS, WALLET_HELD),
    openapi_extra=REQUIRED_KEY_EXTRA,
)


@router.get(
    "/ledger/trial-balance",
    response_model=TrialBalanceOut,
    tags=["ledger"],
    summary="Every account's balance and their total, which is zero",
    description="The books of one currency at this moment: every account, its balance, and the sum of "
    "all of them, which double-entry keeps at zero.",
    responses=problems(KEYED, VALIDATION),
)
async def trial_balance(
    request: Request,
    api_key_digest: ApiKeyDigestDep,
    currency: Annotated[Currency, Query(description="The currency of the books to read.")] = "CREDIT",
) -> TrialBalanceOut:
    async with driver_connection(request) as connection:
        return TrialBalanceOut.of(await reads.trial_balance(connection, api_key_digest, currency))


@router.get(
    "/ledger/export",
    response_class=StreamingResponse,
    tags=["ledger"],
    summary="Stream the journal as JSONL (with hashes), CSV (one row per posting) or Beancount",
    responses={
        200: {
            "content": {media: {"schema": {"type": "string"}} for media in EXPORT_MEDIA.values()},
            "description": "The export, streamed",
        },
        **problems(KEYED, VALIDATION, SEQ_WITHOUT_CHAIN),
    },
    description="The tenant's journal: its hash chains in order (chain 0, then 1, ...), each in order of "
    "its sequence numbers. `chain` restricts it to one chain; `from_seq` and `to_seq` are positions on "
    "`chain`, and refused without it (422 naming `chain`; chain 0 is what a seq meant before the journal had "
    "chains). To read every chain on from where you left off, ask each chain from the seq after the last "
    "one you have of it. With neither, every chain whole. JSONL names each transaction's chain and carries its hash and the previous one's on its chain, "
    "so the chains can be checked offline (`pokna audit verify`); CSV has a `chain` column before `seq`.",
)
async def export(
    streaming: StreamingTenantDep,
    export_format: Annotated[
        Literal["jsonl", "csv", "beancount"], Query(alias="format", description="The export's format.")
    ] = "jsonl",
    chain: ChainParam = None,
    from_seq: FromSeqParam = None,
    to_seq: ToSeqParam = None,
) -> StreamingResponse:
    """Async, on the driver: one transaction throughout, on the connection (and gate place) the request
    holds until the response has been sent. Refused (422 naming the field) before the first byte; a read
    that fails part way raises out of the stream, and the transfer ends unfinished, never as a whole
    answer."""
    ledger.check_chain(chain)
    ledger.check_seq_bounds(chain, from_seq, to_seq)
    exporter = ledger.EXPORTERS[export_format]

    async def lines() -> AsyncIterator[str]:
        async with streaming.connection.transaction():
            async for chunk in exporter(streaming.connection, streaming.tenant_id, chain, from_seq, to_seq):
                yield chunk

    return StreamingResponse(lines(), media_type=EXPORT_MEDIA[export_format])


@router.get(
    "/ledger/checkpoints",
    response_model=list[CheckpointOut],
    response_model_exclude_none=True,  # exactly the signed document: no `heads` where none was signed
    tags=["ledger"],
    summary="Signed chain heads, newest first: take one away to pin the ledger's history",
    description="Each checkpoint signs the head (sequence number and hash) of every one of the journal's hash "
    "chains that has a transaction (`heads`; `seq` and `hash` are chain 0's); a copy kept elsewhere proves "
    "later that the history up to it was not rewritten.",
    responses=problems(KEYED),
)
async def checkpoints(request: Request, api_key_digest: ApiKeyDigestDep) -> list[CheckpointOut]:
    async with driver_connection(request) as connection:
        taken = await reads.checkpoints(connection, api_key_digest)
    return [CheckpointOut.of(checkpoint) for checkpoint in taken]


@router.post(
    "/ledger/checkpoints",
    status_code=201,
    response_model=CheckpointOut,
    response_model_exclude_none=True,
    tags=["ledger"],
    summary="Sign the current chain head now",
    description="`pokna sweep` takes checkpoints on its own; this takes one now, e.g. before an audit.",
    responses=problems(KEYED, IDEMPOTENT),
)
async def new_checkpoint(write: KeyedWriteDep) -> CheckpointOut:
    signing_key = runtime_of(write.request).keys.signing_key

    async def work(opened: Transaction) -> CheckpointOut:
        return CheckpointOut.of(await checkpoint.take_checkpoint_in(opened, signing_key))

    return await write(CheckpointOut, work, status=201)
