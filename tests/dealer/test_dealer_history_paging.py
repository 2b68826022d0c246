"""A long game's whole history, paged at every limit (issue 37, item 1).

`GET /v1/games/{id}/events` answered 500 whenever there was a next page: the cursor was read from a field
the answer's model keeps one level down. The suite's games were shorter than the default page. Here a
six-seat game is played to its end (about sixty events, past the default limit of 20), and its history is
read with the default limit and with every limit from 1 to 100: each way gives the same events, seqs 1..n
with none repeated or skipped, n being the game's own count.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from pokna.db.models.game import Game as GameRow
from pokna.settings import Environment, Settings
from support.game_play import Api, new_tenant_key, obliging, play

SEATS = 6
MAX_LIMIT = 100


@pytest.fixture(name="settings")
def settings_without_rate_limit(tmp_path: Path, database_url: str) -> Settings:
    """Reading the history at every limit is about 330 requests under one key in a burst: past the
    key's rate limit (a real client would wait its Retry-After; the test is about the pages, not the limiter)."""
    return Settings(
        env=Environment.TEST, data_dir=tmp_path / "data", database_url=database_url, rate_limit_per_second=0
    )


def _history(api: Api, game_id: str, limit: int | None) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    cursor: str | None = None
    for _page in range(1000):
        params: dict[str, Any] = {} if limit is None else {"limit": limit}
        if cursor is not None:
            params["starting_after"] = cursor
        page = api.ok(api.get(f"/v1/games/{game_id}/events", **params))
        assert len(page["data"]) <= (20 if limit is None else limit)
        events += page["data"]
        if not page["has_more"]:
            assert page["next_cursor"] is None
            return events
        assert page["data"], "a page with more after it is never empty"
        cursor = page["next_cursor"]
    raise AssertionError("the pages never ended")


def test_a_six_seat_games_history_reads_whole_at_every_limit(
    client: TestClient, sessions: sessionmaker[Session]
) -> None:
    api = Api(client, new_tenant_key(sessions))
    wallets = [api.wallet(1_000) for _ in range(SEATS)]
    game = play([api], api.create_game(wallets[0], wallets[1:], stake=5), obliging)
    with sessions() as session:
        recorded = session.scalar(select(GameRow.event_count).where(GameRow.id == game["id"]))
    assert recorded is not None
    assert recorded > 20  # past the default page, the case that answered 500
    whole = _history(api, game["id"], None)
    assert [event["seq"] for event in whole] == list(range(1, recorded + 1))
    for limit in range(1, MAX_LIMIT + 1):
        assert _history(api, game["id"], limit) == whole, limit
