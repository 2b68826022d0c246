"""What one process holds for its lifetime: settings, the database's connection string, its psycopg pools
(pokna.db.aio) and the keys. No SQLAlchemy engine: nothing on a request's road speaks the ORM.

Never game state: every request loads what it needs from the database, so any number of processes
can serve one PostgreSQL.
"""

from __future__ import annotations

from functools import cached_property

from pokna.db import embedded
from pokna.db.aio import AsyncDatabase
from pokna.db.backend import conninfo_of
from pokna.db.engine import Waits
from pokna.drand import BeaconRelays
from pokna.service_keys import ServiceKeys, load_service_keys
from pokna.settings import Settings

MONITORING_STATEMENT_SECONDS = 2
"""Each statement of a backlog read (five, each normally milliseconds on an index): together within
Prometheus's default scrape timeout (10 s). A slow read costs a scrape its backlog gauges, never the scrape."""

MONITORING_CONNECTIONS = 2
"""One for the backlog read of `/metrics`, one for `/readyz`."""


class Runtime:
    def __init__(self, settings: Settings, conninfo: str) -> None:
        self.settings = settings
        self.conninfo = conninfo
        """The database as libpq reads it, without the waits each pool adds."""

    @classmethod
    def from_settings(cls, settings: Settings) -> Runtime:
        """With no database URL set, this starts the embedded PostgreSQL (pokna.db.embedded); each pool adds
        the requests' waits (docs/operations.md, "Bounded waits")."""
        url = embedded.database_url(settings.database_url, settings.data_dir, settings.postgres_bindir)
        return cls(settings, conninfo_of(url))

    @cached_property
    def aio(self) -> AsyncDatabase:
        """The requests' connections, with the configured waits and sizes; opened by the app's lifespan
        (pokna.app.assembly), closed when it ends."""
        return AsyncDatabase.for_conninfo(
            self.conninfo,
            Waits(
                connect=self.settings.database_connect_timeout_seconds,
                statement=self.settings.database_statement_timeout_seconds,
                idle_in_transaction=self.settings.database_idle_in_transaction_timeout_seconds,
            ),
            size=self.settings.database_pool_size,
            overflow=self.settings.database_pool_overflow,
        )

    @cached_property
    def monitoring(self) -> AsyncDatabase:
        """Async connections of their own (a pool of two beside the requests' pool, statements cut at
        MONITORING_STATEMENT_SECONDS), for `/metrics`' reads of the backlog (pokna.backlog) and `/readyz`
        (pokna.api.health), one each: the requests' connections are the database gate's places, and a
        scrape or a probe must neither take one from a request nor wait behind the requests when every
        place is taken. Opened with the requests' pool by the app's lifespan; none is opened before a
        probe or a scrape needs it."""
        waits = Waits(
            connect=self.settings.database_connect_timeout_seconds,
            statement=MONITORING_STATEMENT_SECONDS,
        )
        return AsyncDatabase.for_conninfo(self.conninfo, waits, size=0, overflow=MONITORING_CONNECTIONS)

    @cached_property
    def beacon(self) -> BeaconRelays:
        """The drand relays beacon-mode games read their rounds from (docs/operations.md, section 10)."""
        return BeaconRelays.for_settings(self.settings)

    @cached_property
    def keys(self) -> ServiceKeys:
        """Loaded on first use, so commands that never sign anything never create development keys."""
        return load_service_keys(self.settings)
