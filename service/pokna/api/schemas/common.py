from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field, StringConstraints

MAX_AMOUNT = 10**12


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
    StringConstraints(pattern=r"^[A-Z][A-Z0-9]{1,15}$"),
    Field(description="2-16 upper-case letters or digits, the first a letter.", examples=["CREDIT"]),
]
