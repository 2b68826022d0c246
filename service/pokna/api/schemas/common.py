from __future__ import annotations

from typing import Annotated

from pydantic import Field, StringConstraints

MAX_AMOUNT = 10**12

Amount = Annotated[
    int,
    Field(gt=0, le=MAX_AMOUNT, strict=True, description="Minor units (integer), 1 to 10^12.", examples=[100]),
]
AccountId = Annotated[str, StringConstraints(min_length=1, max_length=40), Field(examples=["acct_3b1f0c…"])]
Currency = Annotated[
    str,
    StringConstraints(pattern=r"^[A-Z0-9]{2,16}$"),
    Field(description="2-16 upper-case letters or digits.", examples=["CREDIT"]),
]
