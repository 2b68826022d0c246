"""What a migration command asks for, resolved against this release's migrations without a database: a
Citus worker lets a command through only when it asks for the revision the worker is already at
(`pokna.db.migrate.resolves_to`, migrations/env.py), and names a revision newer than the release
(`is_known`)."""

from __future__ import annotations

import pytest

from pokna.db import migrate
from pokna.db.migrate import is_known, resolves_to

SCRIPTS = [script.revision for script in migrate.scripts().walk_revisions()]  # newest first
HEAD, PREVIOUS = SCRIPTS[0], SCRIPTS[1]


@pytest.mark.parametrize(
    ("asked", "at", "expected"),
    [
        (HEAD, HEAD, True),
        ("head", HEAD, True),
        ("heads", HEAD, True),
        ((HEAD,), HEAD, True),  # what Alembic hands env.py for `heads`
        (HEAD[:4], HEAD, True),  # a unique prefix
        (PREVIOUS, PREVIOUS, True),
        ("head", PREVIOUS, False),
        (PREVIOUS, HEAD, False),
        ("-1", HEAD, False),  # a step is a change
        ("+1", PREVIOUS, False),
        ("base", HEAD, False),
        (None, HEAD, False),  # `base`, as Alembic resolves it
        ("00", HEAD, False),  # a prefix of many
        ("9999_from_a_newer_release", HEAD, False),
    ],
)
def test_a_destination_is_the_revision_only_when_it_names_it(
    asked: str | tuple[str, ...] | None, at: str, expected: bool
) -> None:
    assert resolves_to(asked, at) is expected


def test_a_revision_is_known_only_to_a_release_that_has_its_migration() -> None:
    assert migrate.head_revision() == HEAD
    assert all(is_known(revision) for revision in SCRIPTS)
    assert len(SCRIPTS) >= 25
    assert not is_known("9999_from_a_newer_release")
    assert not is_known(HEAD[:4])
