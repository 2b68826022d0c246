"""One shape for every list: `{data, has_more, next_cursor}`, built by one function.

A repository fetches `limit + 1` rows after the cursor; `page_of` keeps `limit` of them and lets the
extra row say whether there is more. Services return `Page[...]`; the API documents and sends it as is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from pydantic import BaseModel, Field

Item = TypeVar("Item")


class Page(BaseModel, Generic[Item]):
    data: list[Item]
    has_more: bool
    next_cursor: str | None = Field(
        description="Pass as `starting_after` to get the next page; null on the last."
    )


def page_of(rows: Sequence[Item], limit: int, cursor_of: Callable[[Item], str]) -> Page[Item]:
    """The page of `rows`, which were fetched with `limit + 1` so that the extra one tells `has_more`."""
    data = list(rows[:limit])
    has_more = len(rows) > limit
    return Page[Item](data=data, has_more=has_more, next_cursor=cursor_of(data[-1]) if has_more else None)
