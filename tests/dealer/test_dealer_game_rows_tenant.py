"""A game's rows name a tenant that exists without a foreign key to `tenant` of their own
(0024_game_write_checks): each names its tenant in a NOT NULL composite key to a parent of the same tenant,
and the parent's own keys reach `tenant`. Rows naming an unknown tenant are still refused, and a tenant with
games still cannot go. docs/ledger.md, "A game's rows and their tenant".
"""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Connection, Engine, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, sessionmaker

from support.game_play import Api, Game, new_tenant_key

NOBODY = "ten_nobody"
# The tables whose key to `tenant` 0024 dropped.
IMPLIED = ("game", "game_seat", "game_event", "game_roll", "game_log_leaf")

FOREIGN_KEYS = """
SELECT c.conrelid::regclass::text, c.confrelid::regclass::text, c.confdeltype, c.confupdtype,
    array_agg(a.attname::text ORDER BY k.n), bool_and(a.attnotnull)
FROM pg_constraint c
CROSS JOIN LATERAL unnest(c.conkey) WITH ORDINALITY AS k(attnum, n)
JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum
WHERE c.contype = 'f'
GROUP BY c.oid, c.conrelid, c.confrelid, c.confdeltype, c.confupdtype
"""


def _keys(connection: Connection) -> dict[str, list[tuple[str, str, str, list[str], bool]]]:
    keys: dict[str, list[tuple[str, str, str, list[str], bool]]] = {}
    for table, parent, on_delete, on_update, columns, not_null in connection.execute(text(FOREIGN_KEYS)):
        keys.setdefault(table, []).append((parent, on_delete, on_update, columns, not_null))
    return keys


def test_the_game_rows_name_their_tenant_through_their_parent_only(engine: Engine) -> None:
    """What the migration took away: the tenant keys the parent's key implies. Each table keeps its keys to
    its parents, and none to `tenant`."""
    with engine.connect() as connection:
        keys = _keys(connection)
    parents = {table: sorted(key[0] for key in keys[table]) for table in IMPLIED}
    assert parents == {
        "game": ["account", "game_table"],
        "game_seat": ["account", "game"],
        "game_event": ["game"],
        "game_roll": ["game"],
        "game_log_leaf": ["game"],
    }


def test_every_tenant_owned_row_reaches_an_existing_tenant_by_its_keys(engine: Engine) -> None:
    """The argument the dropped keys rest on, held for every table with a `tenant_id`: a table without its
    own key to `tenant` has a key whose columns are all NOT NULL and include `tenant_id`, refusing the
    parent's delete and key change (NO ACTION or RESTRICT: a cascade or SET NULL would let a row lose its
    parent), to a table that reaches `tenant` in turn."""
    with engine.connect() as connection:
        keys = _keys(connection)
        owned = set(
            connection.scalars(
                text(
                    "SELECT c.relname::text FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
                    "WHERE a.attname = 'tenant_id' AND c.relkind = 'r' AND NOT a.attisdropped "
                    "AND c.relnamespace = 'public'::regnamespace"
                )
            )
        )
    # A table holding its rows' tenant by other means (docs/ledger.md: the posting's trigger; Alembic's
    # version has none).
    checked_otherwise = {"posting"}

    def reaches(table: str, seen: frozenset[str]) -> bool:
        for parent, on_delete, on_update, columns, not_null in keys.get(table, []):
            if "tenant_id" not in columns or not not_null or parent in seen:
                continue
            if parent == "tenant" or (
                on_delete in ("a", "r") and on_update in ("a", "r") and reaches(parent, seen | {table})
            ):
                return True
        return False

    assert {table for table in owned - checked_otherwise if not reaches(table, frozenset())} == set()


@pytest.fixture
def played(client: TestClient, sessions: sessionmaker[Session]) -> tuple[Game, str]:
    """A game dealt and started (its seats, events and rolls written), and its vigo's wallet."""
    api = Api(client, new_tenant_key(sessions))
    vigo, han, leia = (api.wallet(100) for _ in range(3))
    game = api.create_game(vigo, [han, leia], stake=5)
    api.ok(api.act(game["id"], {"type": "start", "account_id": vigo}))
    return api.game(game["id"]), vigo


# A copy of one of the game's rows, with an unknown tenant (and for a game, an id and link of its own): the
# statement the check must refuse, and the key that refuses it.
COPIES = {
    "game": (
        "INSERT INTO game SELECT (json_populate_record(g, json_build_object('id', 'game_copy', 'tenant_id', "
        "CAST(:tenant AS text), 'public_token', 'copy'))).* FROM game g WHERE g.id = :game",
        "fk_game_pot_account_id_account",
    ),
    "game_seat": (
        "INSERT INTO game_seat SELECT (json_populate_record(s, json_build_object('tenant_id', CAST(:tenant AS text)))).* "
        "FROM game_seat s WHERE s.game_id = :game AND s.seat = 0",
        # Both its keys refuse it; PostgreSQL checks them in the order they were made.
        "fk_game_seat_(account_id_account|game_id_game)",
    ),
    "game_event": (
        "INSERT INTO game_event SELECT (json_populate_record(e, json_build_object('tenant_id', CAST(:tenant AS text)))).* "
        "FROM game_event e WHERE e.game_id = :game AND e.seq = 1",
        "fk_game_event_game_id_game",
    ),
    "game_roll": (
        "INSERT INTO game_roll SELECT (json_populate_record(r, json_build_object('tenant_id', CAST(:tenant AS text)))).* "
        "FROM game_roll r WHERE r.game_id = :game AND r.nonce = 0",
        "fk_game_roll_game_id_game",
    ),
    "game_log_leaf": (
        "INSERT INTO game_log_leaf (tenant_id, leaf_index, game_id, entry, appended_at) "
        "VALUES (:tenant, 0, :game, 'a leaf', now())",
        "fk_game_log_leaf_game_id_game",
    ),
}


@pytest.mark.parametrize("table", sorted(COPIES))
def test_a_game_row_of_an_unknown_tenant_is_refused(
    engine: Engine, played: tuple[Game, str], table: str
) -> None:
    game, _vigo = played
    statement, key = COPIES[table]
    with pytest.raises(DBAPIError, match=key), engine.begin() as connection:
        connection.execute(text(statement), {"tenant": NOBODY, "game": game["id"]})


def test_a_tenant_with_games_cannot_be_deleted(engine: Engine, played: tuple[Game, str]) -> None:
    """Its API keys gone first (their own key to `tenant` would refuse before any game row's could); what
    refuses then is the first key of the chain the game's rows hang from."""
    game, _vigo = played
    with engine.connect() as connection, connection.begin():
        tenant = connection.scalar(text("SELECT tenant_id FROM game WHERE id = :game"), {"game": game["id"]})
        connection.execute(text("DELETE FROM api_key WHERE tenant_id = :tenant"), {"tenant": tenant})
        with pytest.raises(DBAPIError, match="violates foreign key constraint"):
            connection.execute(text("DELETE FROM tenant WHERE id = :tenant"), {"tenant": tenant})
