"""POKNA_DATABASE_URL read into the libpq connection string the pools connect with (pokna.db.backend), with
no engine made: a multi-host URL in either of its documented spellings (docs/operations.md) names the same
hosts, and a URL for another database is refused."""

from __future__ import annotations

import pytest
from psycopg.conninfo import conninfo_to_dict

from pokna.db.backend import UnsupportedDatabase, conninfo_of

READ_WRITE = "target_session_attrs=read-write"


@pytest.mark.parametrize(
    "url",
    [
        f"postgresql+psycopg://pokna:secret@/pokna?host=primary.db:5432&host=standby.db:5433&{READ_WRITE}",
        f"postgresql+psycopg://pokna:secret@/pokna?host=primary.db,standby.db&port=5432,5433&{READ_WRITE}",
    ],
)
def test_both_spellings_of_a_multi_host_url_name_the_same_hosts(url: str) -> None:
    assert conninfo_to_dict(conninfo_of(url)) == {
        "host": "primary.db,standby.db",
        "port": "5432,5433",
        "user": "pokna",
        "password": "secret",
        "dbname": "pokna",
        "target_session_attrs": "read-write",
    }


def test_a_password_is_read_unquoted_and_libpq_options_are_kept() -> None:
    found = conninfo_to_dict(conninfo_of("postgresql+psycopg://pokna:s%40cret@db:6432/pokna?sslmode=require"))
    assert found == {
        "host": "db",
        "port": "6432",
        "user": "pokna",
        "password": "s@cret",
        "dbname": "pokna",
        "sslmode": "require",
    }


def test_another_database_is_refused() -> None:
    with pytest.raises(UnsupportedDatabase):
        conninfo_of("mysql://pokna@db/pokna")
