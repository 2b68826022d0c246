"""Cursor pagination, one shape for every list: `limit` + `starting_after` in, `{data, has_more, next_cursor}` out."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Query
from pydantic import BaseModel

from pokna.api.fields import INTEGER_MAX, NoNul
from pokna.paging import Page as Page  # re-exported: every list route's answer

MAX_LIMIT = 100
CURSOR_PATTERN = r"^[A-Za-z0-9_-]{1,100}$"
"""What every `next_cursor` looks like (an id or a sequence number); anything else is refused as invalid."""


class PageRequest(BaseModel):
    limit: int
    starting_after: str | None


Limit = Annotated[int, Query(ge=1, le=MAX_LIMIT, description="Items per page (1-100).")]


async def page_request(  # no I/O: no trip through the thread pool
    limit: Limit = 20,
    starting_after: Annotated[
        str | None,
        Query(
            pattern=CURSOR_PATTERN,
            description="The `next_cursor` of the previous page; omit for the first page.",
        ),
        NoNul,
    ] = None,
) -> PageRequest:
    return PageRequest(limit=limit, starting_after=starting_after)


PageDep = Annotated[PageRequest, Depends(page_request)]


async def event_page_request(
    limit: Limit = 20,
    starting_after: Annotated[
        int | None,
        Query(
            ge=0,
            le=INTEGER_MAX,
            description="The `next_cursor` of the previous page (an event's `seq`); omit for the first page.",
        ),
    ] = None,
) -> PageRequest:
    """A game's events are numbered, so their cursor is a number in the range of the `seq` column."""
    return PageRequest(limit=limit, starting_after=None if starting_after is None else str(starting_after))


EventPageDep = Annotated[PageRequest, Depends(event_page_request)]
