"""Games and tables over REST. Thin: parse, call the dealer's service, answer what it returns.

A game's writes (create, act, a passed deadline a read or a table's round finds) and its reads are async,
on the driver (pokna.dealer.action.game_action, pokna.dealer.creating, pokna.dealer.reading), each on one
connection, a table's read and creation too (the creation under the keyed transaction,
pokna.api.keyed_writes). Every answer is the dealer's documented model (pokna.dealer.schemas)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Path, Request, Response

from pokna.api.auth import ApiKeyDigestDep
from pokna.api.deps import driver_connection, runtime_of
from pokna.api.direct_route import DirectRoute
from pokna.api.fields import NoNul
from pokna.api.idempotency import REPLAYED_HEADER, SentKeyDep
from pokna.api.keyed_writes import KeyedWriteDep
from pokna.api.pagination import EventPageDep, Page
from pokna.api.problem_docs import IDEMPOTENT, JSON_BODY, KEYED, VALIDATION, problems
from pokna.dealer import service as dealer
from pokna.dealer.clock_dep import ClockDep
from pokna.dealer.problem_docs import (
    ACTION_REFUSALS,
    BAD_SEATING,
    CLIENT_SEED_LOCKED,
    GAME_NOT_FOUND,
    NOT_SEATED,
    ROLL_PENDING,
    ROUND_IN_PROGRESS,
    TABLE_NOT_FOUND,
    VERSION_CONFLICT,
)
from pokna.dealer.requests import ACTION_EXAMPLES, GameAction, GameCreate, TableCreate
from pokna.dealer.schemas import GameActionOut, GameEventOut, GameOut, GameProofOut, TableOut

router = APIRouter(prefix="/v1", route_class=DirectRoute)

GameId = Annotated[str, Path(max_length=40, description="The game's id (`game_...`)."), NoNul]
TableId = Annotated[str, Path(max_length=40, description="The table's id (`tbl_...`)."), NoNul]


def _dealer(request: Request) -> dealer.Dealer:
    runtime = runtime_of(request)
    return dealer.Dealer(runtime.keys)


@router.post(
    "/games",
    status_code=201,
    response_model=GameOut,
    tags=["games"],
    summary="Create a game: seats, stake and the signed fairness commitment",
    description="Seats the Vigo and the players (their wallets must exist, in the game's currency) and "
    "commits to a fresh server seed: the signed commitment is in `fairness.commitment` before anyone rolls. "
    "The game is `open` until the Vigo's `start` (or the open-game deadline cancels it).",
    responses=problems(KEYED, JSON_BODY, IDEMPOTENT, BAD_SEATING),
)
async def create_game(
    body: GameCreate,
    request: Request,
    api_key_digest: ApiKeyDigestDep,
    clock: ClockDep,
    sent_key: SentKeyDep,
) -> Response:
    """Async, on the driver: three round trips and no thread (pokna.dealer.creating)."""
    runtime = runtime_of(request)
    terms = dealer.NewGame(
        vigo_account_id=body.vigo_account_id,
        player_account_ids=body.player_account_ids,
        stake=body.stake,
        challenge_raise=body.challenge_raise,
        currency=body.currency,
        turn_timeout_seconds=body.turn_timeout_seconds,
        rake=None if body.rake is None else dealer.RakeTerms(body.rake.bps, body.rake.cap),
        seat_labels=body.seat_labels,
        fairness_mode=body.fairness_mode,
    )
    keyed = None if sent_key is None else dealer.Keyed(sent_key.key, sent_key.fingerprint)
    async with driver_connection(request) as connection:
        created = await dealer.create_game(
            connection,
            runtime.keys,
            clock,
            dealer.Caller(api_key_digest=api_key_digest),
            keyed,
            terms,
            runtime.beacon.chain,
        )
    return _sent(created)


@router.get(
    "/games/{game_id}",
    response_model=GameOut,
    tags=["games"],
    summary="The game: status, phase, favor, pot, seats and whose turn it is",
    description="`turn` says who must act, what they may do and by when; a deadline that has passed is "
    "applied (its default action) before the game is read.",
    responses=problems(KEYED, VALIDATION, GAME_NOT_FOUND),
)
async def get_game(
    game_id: GameId, request: Request, api_key_digest: ApiKeyDigestDep, clock: ClockDep
) -> GameOut:
    """Async, on one connection: the key's check and the read in one round trip (pokna.dealer.reading)."""
    async with driver_connection(request) as connection:
        caller = dealer.Caller(api_key_digest=api_key_digest)
        return await dealer.read_game(connection, _dealer(request), clock, caller, game_id)


@router.post(
    "/games/{game_id}/actions",
    response_model=GameActionOut,
    tags=["games"],
    summary="Act in a game: set_client_seed, start, roll, claim, challenge, vote or cancel",
    description="One action for one seat (named by `account_id`). `turn.allowed_actions` of the last "
    "answer lists what is accepted now. Deadlines that passed meanwhile are applied first; if the action is "
    "then refused, the problem's `timed_out` lists what they applied. The answer carries the rolls the "
    "action made. In a beacon-mode game a drawing action is accepted first (signed, naming the drand round its "
    "rolls use, which does not exist yet), then resolved when that round arrives: the answer waits for it, "
    "at most one period plus a margin, or is 202 with `fairness.pending_roll` (docs/fairness.md, 1c).",
    responses={
        202: {
            "model": GameActionOut,
            "description": "Beacon mode: the drawing action was accepted, and its drand round did not arrive "
            "in time to resolve it in this request. `fairness.pending_roll` holds the signed acceptance; the "
            "roll resolves when the round arrives (the game's webhooks say so; `pokna sweep` does it if no "
            "request does).",
        },
        **problems(
            KEYED,
            JSON_BODY,
            IDEMPOTENT,
            GAME_NOT_FOUND,
            NOT_SEATED,
            VERSION_CONFLICT,
            CLIENT_SEED_LOCKED,
            ACTION_REFUSALS,
            ROLL_PENDING,
        ),
    },
)
async def act(
    game_id: GameId,
    action: Annotated[GameAction, Body(openapi_examples=ACTION_EXAMPLES)],
    request: Request,
    api_key_digest: ApiKeyDigestDep,
    clock: ClockDep,
    sent_key: SentKeyDep,
) -> Response:
    """Async, on the driver: three round trips and no thread (pokna.dealer.action.game_action). The
    runtime is read from the app, not through `RuntimeDep`: one dependency fewer to solve (issue 24)."""
    runtime = runtime_of(request)
    keyed = None if sent_key is None else dealer.Keyed(sent_key.key, sent_key.fingerprint)
    async with driver_connection(request) as connection:
        played = await dealer.act(
            connection,
            _dealer(request),
            clock,
            dealer.Caller(api_key_digest=api_key_digest),
            keyed,
            game_id,
            action,
            runtime.beacon,
        )
    return _sent(played)


def _sent(played: dealer.Answer) -> Response:
    """The answer as the bytes the dealer built once, which are also what a retry under the same key gets
    back."""
    headers = {REPLAYED_HEADER: "true"} if played.replayed else None
    return Response(played.body, status_code=played.status, media_type="application/json", headers=headers)


@router.get(
    "/games/{game_id}/events",
    response_model=Page[GameEventOut],
    tags=["games"],
    summary="Every roll (with its nonce), decision and money movement, in order",
    description="The game's history, oldest first, paged with `limit` and `starting_after`.",
    responses=problems(KEYED, VALIDATION, GAME_NOT_FOUND),  # its cursor is a number: 422 by its schema
)
async def game_events(
    game_id: GameId,
    page: EventPageDep,
    request: Request,
    api_key_digest: ApiKeyDigestDep,
    clock: ClockDep,
) -> Page[GameEventOut]:
    after = int(page.starting_after) if page.starting_after else 0  # a number, by its schema
    async with driver_connection(request) as connection:
        caller = dealer.Caller(api_key_digest=api_key_digest)
        return await dealer.game_events(
            connection, _dealer(request), clock, caller, game_id, limit=page.limit, after=after
        )


@router.get(
    "/games/{game_id}/proof",
    response_model=GameProofOut,
    tags=["games"],
    summary="The signed proof once the game is over; before that, only the signed commitment",
    description="A settled or cancelled game's proof reveals the server seed; `pokna verify` and the "
    "browser verifier check it offline against the published keys (`/v1/fairness/keys`).",
    responses=problems(KEYED, VALIDATION, GAME_NOT_FOUND),
)
async def game_proof(
    game_id: GameId, request: Request, api_key_digest: ApiKeyDigestDep, clock: ClockDep
) -> GameProofOut:
    async with driver_connection(request) as connection:
        caller = dealer.Caller(api_key_digest=api_key_digest)
        return await dealer.game_proof(connection, _dealer(request), clock, caller, game_id)


@router.post(
    "/tables",
    status_code=201,
    response_model=TableOut,
    tags=["tables"],
    summary="Create a table: a fixed seat order for round after round",
    description="A table deals rounds (`POST /v1/tables/{table_id}/rounds`), passing the title of Vigo "
    "clockwise, and keeps each seat's running total.",
    responses=problems(KEYED, JSON_BODY, IDEMPOTENT, BAD_SEATING),
)
async def create_table(body: TableCreate, clock: ClockDep, write: KeyedWriteDep) -> TableOut:
    terms = dealer.NewTable(
        account_ids=body.account_ids,
        stake=body.stake,
        challenge_raise=body.challenge_raise,
        currency=body.currency,
        turn_timeout_seconds=body.turn_timeout_seconds,
        rake=None if body.rake is None else dealer.RakeTerms(body.rake.bps, body.rake.cap),
    )
    return await write(TableOut, lambda opened: dealer.create_table(opened, terms, clock), status=201)


@router.get(
    "/tables/{table_id}",
    response_model=TableOut,
    tags=["tables"],
    summary="The table with its rounds and each seat's running total",
    description="Rounds in the order they were dealt; totals are paid out minus paid in over them all.",
    responses=problems(KEYED, VALIDATION, TABLE_NOT_FOUND),
)
async def get_table(table_id: TableId, request: Request, api_key_digest: ApiKeyDigestDep) -> TableOut:
    async with driver_connection(request) as connection:
        return await dealer.read_table(connection, api_key_digest, table_id)


@router.post(
    "/tables/{table_id}/rounds",
    status_code=201,
    response_model=GameOut,
    tags=["tables"],
    summary="Deal the next round: a new game with the title of Vigo passed clockwise",
    description="Refused (409 `round_in_progress`) until the previous round has ended.",
    responses=problems(KEYED, IDEMPOTENT, TABLE_NOT_FOUND, ROUND_IN_PROGRESS),
)
async def deal_round(
    table_id: TableId,
    request: Request,
    api_key_digest: ApiKeyDigestDep,
    clock: ClockDep,
    sent_key: SentKeyDep,
) -> Response:
    """Async, on the driver, as a new game is (pokna.dealer.tables.deal_round)."""
    runtime = runtime_of(request)
    keyed = None if sent_key is None else dealer.Keyed(sent_key.key, sent_key.fingerprint)
    async with driver_connection(request) as connection:
        dealt = await dealer.deal_round(
            connection,
            _dealer(request),
            clock,
            dealer.Caller(api_key_digest=api_key_digest),
            keyed,
            table_id,
            runtime.beacon.chain,
        )
    return _sent(dealt)
