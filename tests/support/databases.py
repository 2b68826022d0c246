"""Fresh, migrated databases for each test.

Each pytest worker migrates one template with Alembic (never `create_all`), and each test gets its own
copy (`CREATE DATABASE ... TEMPLATE`). Tests may
commit freely and run in parallel without seeing each other.
"""

from __future__ import annotations

import uuid

from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url

from pokna.db import migrate


def _admin_engine(admin_url: str) -> Engine:
    return create_engine(admin_url, isolation_level="AUTOCOMMIT", poolclass=None)


def with_database(url: str, database: str) -> str:
    return make_url(url).set(database=database).render_as_string(hide_password=False)


class PostgresDatabases:
    def __init__(self, admin_url: str, prefix: str) -> None:
        self.admin_url = admin_url
        self.prefix = f"{prefix}_{uuid.uuid4().hex[:6]}"
        self.admin = _admin_engine(admin_url)
        self._template: str | None = None

    def _create(self, name: str, template: str | None = None) -> str:
        clause = f" TEMPLATE {template}" if template else ""
        with self.admin.connect() as connection:
            connection.execute(text(f'CREATE DATABASE "{name}"{clause}'))
        return with_database(self.admin_url, name)

    def template(self) -> str:
        if self._template is None:
            name = f"{self.prefix}_tpl"
            migrate.upgrade(self._create(name))
            self._template = name
        return self._template

    def migrated(self) -> str:
        return self._create(f"{self.prefix}_{uuid.uuid4().hex[:10]}", template=self.template())

    def empty(self) -> str:
        return self._create(f"{self.prefix}_{uuid.uuid4().hex[:10]}")

    def drop(self, url: str) -> None:
        name = make_url(url).database
        with self.admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))

    def close(self) -> None:
        if self._template:
            with self.admin.connect() as connection:
                connection.execute(text(f'DROP DATABASE IF EXISTS "{self._template}" WITH (FORCE)'))
        self.admin.dispose()
