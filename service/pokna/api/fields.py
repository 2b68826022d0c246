from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, Final

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints

from pokna.api.written_numbers import WholeDouble

MAX_AMOUNT = 10**12
# The ranges of the columns an integer input is compared with. A number the database cannot hold is bad
# input (422 naming it), so every integer the API takes declares a maximum no larger than its column's,
# and the OpenAPI document says so too.
INTEGER_MAX = 2**31 - 1
"""PostgreSQL `integer` (a game's `version`, an event's `seq`)."""
_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:\d{2})?$")


def _rfc3339_only(value: Any) -> Any:
    """A moment written as the document says (`date-time`), not a number pydantic would read as Unix time."""
    if isinstance(value, str) and not _RFC3339.match(value):
        raise ValueError("an RFC 3339 date-time, like 2026-12-01T14:00:00Z")
    return value


Moment = Annotated[datetime, BeforeValidator(_rfc3339_only)]
"""A date-time in a query: RFC 3339 only (a time without an offset is UTC)."""

SEQ_MAX = 2**53 - 1  # a journal seq is hashed and signed as an I-JSON integer, so none is larger
"""Within PostgreSQL's `bigint` (a journal transaction's `seq`, amounts)."""


def _refuse_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("must not contain the NUL character (U+0000)")
    return value


# PostgreSQL text cannot hold U+0000: every string the API takes refuses it as bad input (422 naming it).
NoNul = AfterValidator(_refuse_nul)


def _whole_number(value: Any) -> Any:
    """JSON Schema's `integer`, which the document says, is a number without a fractional part however it
    is written: 10, 10.0 and 1e1 are all ten to every validator and generated client, so here too (issue 37,
    item 5). A fraction, a string, `true` or null stays refused (422 naming the field), and so does a fraction
    a double rounds to whole (`0.99999999999999999`): a body's number is judged as written
    (`pokna.api.written_numbers`; issue 46, L4)."""
    if isinstance(value, WholeDouble):
        return value if value.exact is None else value.exact
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


WHOLE_NUMBER = BeforeValidator(_whole_number)
"""After a strict `int` and its bounds (`Annotated[int, Field(..., strict=True), WHOLE_NUMBER]`): every integer
a request body takes is a JSON number with no fractional part, nothing else."""

Amount = Annotated[
    int,
    Field(gt=0, le=MAX_AMOUNT, strict=True, description="Minor units (integer), 1 to 10^12.", examples=[100]),
    WHOLE_NUMBER,
]
AccountId = Annotated[
    str, StringConstraints(min_length=1, max_length=40), NoNul, Field(examples=["acct_3b1f0c…"])
]

# Words Beancount's lexer reads as values, never as a currency: `open ... TRUE` is a syntax error there, and
# Beancount has no quoting for a currency, so one such account would break the tenant's whole export.
BEANCOUNT_KEYWORDS: Final = frozenset({"TRUE", "FALSE", "NULL"})


def _not_a_beancount_word(value: str) -> str:
    if value in BEANCOUNT_KEYWORDS:
        raise ValueError("must not be TRUE, FALSE or NULL, which the ledger's Beancount export cannot name")
    return value


Currency = Annotated[
    str,
    StringConstraints(pattern=r"^[A-Z][A-Z0-9]{1,15}$"),
    AfterValidator(_not_a_beancount_word),
    Field(
        description="2-16 upper-case letters or digits, the first a letter; not TRUE, FALSE or NULL.",
        examples=["CREDIT"],
        json_schema_extra={"pattern": r"^(?!(?:TRUE|FALSE|NULL)$)[A-Z][A-Z0-9]{1,15}$"},
    ),
]


class RakeTermsIn(BaseModel):
    """The operator's share of each pot paid out: `bps` basis points, rounded down, at most `cap` minor units."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"bps": 500, "cap": 100}]})

    bps: Annotated[int, Field(ge=0, le=10_000, strict=True), WHOLE_NUMBER] = Field(
        description="Basis points of the pot: 0 (no rake) to 10000 (all of it)."
    )
    cap: Annotated[int, Field(ge=0, le=MAX_AMOUNT, strict=True), WHOLE_NUMBER] | None = Field(
        default=None,
        description="At most this many minor units per pot; absent or null for no cap.",
    )
