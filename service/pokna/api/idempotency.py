"""`Idempotency-Key` on POSTs: the HTTP side of `pokna.idempotency`.

This module reads the header, fingerprints the request (method, path and the body's JSON with its keys
sorted, so a retry spelled differently is the same request) and shapes the response; what a claim is, when
it is committed and when it is released is `pokna.idempotency.service`'s to decide (its docstring states
the guarantees). Every keyed route claims the key on the driver, through the one keyed transaction
(pokna.idempotency.keyed): the hot paths (a game's creation and actions,
deposits and withdrawals) with the answer's bytes they build, the admin writes (wallets, checkpoints, the
tenant's defaults, tables, webhook endpoints and deliveries) through pokna.api.keyed_writes, answering their
documented model. No keyed write runs on an ORM session.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Annotated, Any, NoReturn

from fastapi import Depends, Header, Request
from fastapi.exceptions import RequestValidationError
from pydantic import AfterValidator, TypeAdapter, WithJsonSchema
from pydantic_core import PydanticCustomError

from pokna.errors import IdempotencyKeyRequired

REPLAYED_HEADER = "Idempotent-Replayed"
KEY_HEADER = "Idempotency-Key"
MAX_KEY_LENGTH = 255

_KEY = r"[!-~](?:[ -~]{0,253}[!-~])?"
IDEMPOTENCY_KEY_PATTERN = rf'^(?:{_KEY}|"{_KEY}")$'
"""1-255 printable ASCII characters, not starting or ending with a space, optionally in double quotes:
exactly what is accepted (`key_problem` says the same in words)."""


def key_problem(sent: str) -> str | None:
    """What is wrong with an `Idempotency-Key` as sent, in words; None for a key the pattern accepts.

    The header is checked here rather than by a `pattern` on the parameter: pydantic words a pattern's
    refusal as the regular expression itself, which tells a client nothing about what to send."""
    quoted = len(sent) > 2 and sent[0] == sent[-1] == '"'
    if _fits(sent) or (quoted and _fits(sent[1:-1])):
        return None
    key = sent[1:-1] if quoted else sent
    if not key:
        return f"an {KEY_HEADER} is 1-{MAX_KEY_LENGTH} printable ASCII characters; this one is empty"
    if len(key) > MAX_KEY_LENGTH:
        return f"an {KEY_HEADER} is at most {MAX_KEY_LENGTH} characters; this one has {len(key)}"
    for position, character in enumerate(key):
        if not " " <= character <= "~":
            return (
                f"an {KEY_HEADER} holds printable ASCII characters only (space to `~`); this one has "
                f"U+{ord(character):04X} at position {position}"
            )
    return f"an {KEY_HEADER} may not start or end with a space"


def _fits(key: str) -> bool:
    # Printable ASCII is space to `~`: the ASCII characters `isprintable` takes (C loops, not a generator
    # over the key's characters on every keyed request).
    return 0 < len(key) <= MAX_KEY_LENGTH and key.isascii() and key.isprintable() and key[0] != " " != key[-1]


def _checked_key(sent: str) -> str:
    if (problem := key_problem(sent)) is not None:
        raise PydanticCustomError("idempotency_key", problem)
    return sent


IdempotencyKey = Annotated[
    str,
    AfterValidator(_checked_key),
    WithJsonSchema({"type": "string", "pattern": IDEMPOTENCY_KEY_PATTERN}),
]
"""The header's value, refused in words (`key_problem`); documented by its pattern."""

_KEY_DESCRIPTION = (
    "Makes the POST safe to retry: a retry with the same key and body returns the stored response and does "
    "nothing more. 1-255 printable ASCII characters, not starting or ending with a space; a key sent in "
    'double quotes is the same key unquoted, and an empty or blank one (`""`) is refused, as are two of '
    "these headers on one request."
)
_KEY_EXAMPLE = "order-7f3c2a"


def _unquoted(key: str | None) -> str | None:
    """A key sent quoted (`"abc"`) is the same key as `abc`; the header's schema already checked it."""
    if key is not None and len(key) > 2 and key[0] == key[-1] == '"':
        return key[1:-1]
    return key


@dataclass(frozen=True)
class SentKey:
    key: str
    """Unquoted."""
    fingerprint: str


async def get_sent_key(
    request: Request,
    idempotency_key: Annotated[
        IdempotencyKey | None,
        Header(alias=KEY_HEADER, description=_KEY_DESCRIPTION, examples=[_KEY_EXAMPLE]),
    ] = None,
) -> SentKey | None:
    """The request's key and fingerprint, or None without a key: for the async paths, which claim the key
    themselves (pokna.idempotency.keyed)."""
    key = _unquoted(idempotency_key)
    if key is None:
        return None
    if (sent := len(request.headers.getlist(KEY_HEADER))) > 1:
        # FastAPI reads the first; another reader the last, or both joined: a retry with the two in
        # another order, or with a proxy's fresh key first, would be another request and post again.
        _refuse_key(f"send one {KEY_HEADER}; this request has {sent}", idempotency_key)
    if not key.strip(' "'):
        # `""` or `" "` fit the header's pattern as keys of their own, but mean none: refused like any
        # other key the pattern refuses, naming the header.
        _refuse_key("an empty or blank key; send 1-255 printable ASCII characters", idempotency_key)
    # Only a keyed request is ever compared with another; FastAPI has already read (and cached) the body.
    return SentKey(key, request_fingerprint(request.method, request.url.path, await request.body()))


def _refuse_key(reason: str, sent: str | None) -> NoReturn:
    raise RequestValidationError(
        [{"type": "string_pattern_mismatch", "loc": ("header", KEY_HEADER), "msg": reason, "input": sent}]
    )


SentKeyDep = Annotated[SentKey | None, Depends(get_sent_key)]


async def get_sent_key_required_by_route(
    request: Request,
    idempotency_key: Annotated[
        IdempotencyKey | None, Header(alias=KEY_HEADER, include_in_schema=False)
    ] = None,
) -> SentKey | None:
    """`get_sent_key` for a route that requires the key and refuses its absence itself, after checking
    the API key (a request with neither is a 401, as everywhere): documented as required by the route's
    `openapi_extra=REQUIRED_KEY_EXTRA`."""
    return await get_sent_key(request, idempotency_key)


RequiredSentKeyDep = Annotated[SentKey | None, Depends(get_sent_key_required_by_route)]


def key_required() -> IdempotencyKeyRequired:
    return IdempotencyKeyRequired(
        f"this request moves money: send an {KEY_HEADER} header (1-{MAX_KEY_LENGTH} printable ASCII "
        "characters, a new one for each request and the same one on its retries), so that a retry "
        "after a lost answer cannot move the money twice"
    )


def request_fingerprint(method: str, path: str, raw_body: bytes) -> str:
    """What tells a retry of the same request from another request under the same key."""
    try:
        canonical = (
            json.dumps(json.loads(raw_body), sort_keys=True, separators=(",", ":")).encode()
            if raw_body
            else b""
        )
    except (ValueError, RecursionError):  # not JSON, or nested past the parser's depth: the bytes as sent
        canonical = raw_body
    return hashlib.sha256(method.encode() + b" " + path.encode() + b"\n" + canonical).hexdigest()


REQUIRED_KEY_EXTRA: dict[str, Any] = {
    "parameters": [
        {
            "name": KEY_HEADER,
            "in": "header",
            "required": True,
            "description": _KEY_DESCRIPTION + " Required here: this request moves money.",
            "schema": {
                **TypeAdapter(IdempotencyKey).json_schema(),
                "description": _KEY_DESCRIPTION,
                "examples": [_KEY_EXAMPLE],
                "title": KEY_HEADER,
            },
        }
    ]
}
"""The `openapi_extra` of a route with `RequiredSentKeyDep`: its key, documented as required."""
