"""The fast response encoder gives FastAPI's jsonable_encoder answer on everything our services return."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from enum import StrEnum
from typing import Any

from fastapi.encoders import jsonable_encoder
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from pokna.api.encoding import json_ready


class Color(StrEnum):
    RED = "red"


leaves = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=8)
    | st.datetimes(timezones=st.just(UTC))
    | st.datetimes()
    | st.dates()
    | st.times()
    | st.just(Color.RED)
    | st.just(timedelta(seconds=90))
)
keys = st.text(max_size=6).filter(lambda key: not key.startswith("_sa"))
documents = st.recursive(
    leaves,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(keys | st.integers(), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(documents)
def test_json_ready_matches_jsonable_encoder(document: Any) -> None:
    assert json_ready(document) == jsonable_encoder(document)


class Answer(BaseModel):
    at: datetime
    document: Any
    items: list[dict[str, Any]]


@given(
    st.datetimes(timezones=st.just(UTC)), documents, st.lists(st.dictionaries(keys, documents), max_size=3)
)
def test_a_pydantic_answer_is_encoded_as_jsonable_encoder_does(
    at: datetime, document: Any, items: list[dict[str, Any]]
) -> None:
    answer = Answer(at=at, document=document, items=items)
    assert json_ready(answer) == jsonable_encoder(answer)
    assert json_ready({"answers": [answer]}) == jsonable_encoder({"answers": [answer]})


def test_datetimes_become_iso_text() -> None:
    moment = datetime(2026, 11, 30, 1, 2, 3, 456, tzinfo=UTC)
    assert json_ready({"at": moment, "on": date(2026, 11, 30), "time": time(1, 2)}) == {
        "at": "2026-11-30T01:02:03.000456+00:00",
        "on": "2026-11-30",
        "time": "01:02:00",
    }


def test_keys_starting_with_sa_are_kept() -> None:
    """jsonable_encoder drops them as SQLAlchemy internals; a client's metadata may use such a key."""
    assert json_ready({"metadata": {"_sale": 1}}) == {"metadata": {"_sale": 1}}
    assert jsonable_encoder({"metadata": {"_sale": 1}}) == {"metadata": {}}
