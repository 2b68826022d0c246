"""The admin side's keyed writes (opening a wallet, a checkpoint, the tenant's defaults, a table) on the
driver, under the one keyed transaction (pokna.idempotency.keyed), answering as the route's documented model.

The hot paths send their answer as bytes they built; these answer a pydantic model, which FastAPI
serializes as it does any route's, and store it under the key in the work's transaction, beside its
writes: claim 1 round trip (with the API key's check), then BEGIN, the hold and the work's reads 1, then the
writes, the stored answer and COMMIT 1. Without a key the API key is checked beside the reads. A replay
is the claim's round trip alone, its stored answer read back into the same model (so a replay is checked
against the document too)."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, TypeVar

import psycopg
from fastapi import Depends, Request, Response
from pydantic import BaseModel

from pokna.api.auth import ApiKeyDigestDep
from pokna.api.deps import driver_connection, runtime_of
from pokna.api.encoding import json_ready
from pokna.api.idempotency import REPLAYED_HEADER, SentKey, SentKeyDep
from pokna.db.aio import AsyncDatabase
from pokna.idempotency import service as idempotency
from pokna.idempotency.keyed import Answer, Caller, Claim, Keyed, Refusals, Transaction, keyed, transaction

log = logging.getLogger("pokna.idempotency")
Model = TypeVar("Model", bound=BaseModel)
Work = Callable[[Transaction], Awaitable[Model]]
"""The write in its transaction: `Transaction.read` for its reads, then its writes queued on the
connection; returns the answer."""


@dataclass(frozen=True)
class KeyedWrite:
    """A keyed write's request: its API key and its Idempotency-Key, if sent."""

    request: Request
    response: Response
    api_key_digest: str
    sent: SentKey | None

    async def __call__(
        self, answer: type[Model], work: Work[Model], *, status: int, refusals: Refusals | None = None
    ) -> Model:
        """`work`'s answer with `status`, or the answer stored under the sent key (with its status)."""
        claimed: list[Claim] = []

        async def attempt(caller: Caller, claim: Claim | None) -> Model:
            if claim is not None:
                claimed.append(claim)
            async with transaction(connection, caller, claim, refusals) as opened:
                body = await work(opened)
                if claim is not None:
                    # ASCII-escaped JSON, so any text the body holds (even NUL) fits a PostgreSQL text column.
                    encoded = json.dumps(json_ready(body), separators=(",", ":"))
                    stored = {
                        "tenant_id": claim.tenant_id,
                        "key": claim.key,
                        "status": status,
                        "body": encoded,
                    }
                    await connection.execute(idempotency.STORE_RESPONSE, stored)
            return body

        sent = None if self.sent is None else Keyed(self.sent.key, self.sent.fingerprint)
        caller = Caller(api_key_digest=self.api_key_digest)
        try:
            async with driver_connection(self.request) as connection:
                done = await keyed(connection, caller, sent, attempt, check_in_transaction=True)
        except BaseException:
            if claimed and connection.closed:
                await _release(runtime_of(self.request).aio, claimed[0])
            raise
        if isinstance(done, Answer):
            self.response.status_code = done.status
            self.response.headers[REPLAYED_HEADER] = "true"
            return answer.model_validate_json(done.body)
        self.response.status_code = status
        return done


async def get_keyed_write(
    request: Request, response: Response, api_key_digest: ApiKeyDigestDep, sent: SentKeyDep
) -> KeyedWrite:
    return KeyedWrite(request, response, api_key_digest, sent)


KeyedWriteDep = Annotated[KeyedWrite, Depends(get_keyed_write)]


async def _release(database: AsyncDatabase, claim: Claim) -> None:
    """Release a claim whose connection the failure closed (a COMMIT the database refused, say), on another
    one, once the request's is given back. The work's own error is what the caller must see: should the
    database be unreachable for the release too, the claim stays unfinished and unlocked, and a retry
    takes it over."""
    try:
        async with database.connection() as connection:
            await idempotency.release(connection, claim.tenant_id, claim.key, claim.token)
    except psycopg.Error as error:  # not its text: it may carry the statement's parameters
        log.warning("could not release idempotency key %r (%s)", claim.key, type(error).__name__)
