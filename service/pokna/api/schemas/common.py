from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field, StringConstraints

MAX_AMOUNT = 10**12
# The ranges of the columns an integer input is compared with. A number the database cannot hold is bad
# input (422 naming it), so every integer the API takes declares a maximum no larger than its column's,
# and the OpenAPI document says so too.
INTEGER_MAX = 2**31 - 1
"""PostgreSQL `integer` (a game's `version`, an event's `seq`)."""
BIGINT_MAX = 2**63 - 1
SEQ_MAX = 2**53 - 1  # a journal seq is hashed and signed as an I-JSON integer, so none is larger
"""PostgreSQL `bigint`, SQLite's INTEGER (a journal transaction's `seq`, amounts)."""


def _refuse_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("must not contain the NUL character (U+0000)")
    return value


# PostgreSQL text cannot hold U+0000: every string the API takes refuses it as bad input (422 naming it).
NoNul = AfterValidator(_refuse_nul)

Amount = Annotated[
    int,
    Field(gt=0, le=MAX_AMOUNT, strict=True, description="Minor units (integer), 1 to 10^12.", examples=[100]),
]
AccountId = Annotated[
    str, StringConstraints(min_length=1, max_length=40), NoNul, Field(examples=["acct_3b1f0c…"])
]
Currency = Annotated[
    str,
    StringConstraints(pattern=r"^[A-Z0-9]{2,16}$"),
    Field(description="2-16 upper-case letters or digits.", examples=["CREDIT"]),
]
