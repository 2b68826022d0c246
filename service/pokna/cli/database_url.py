"""The database a command uses: POKNA_DATABASE_URL, or the data directory's private PostgreSQL, started on
demand and, after the command, left running or stopped (`leave_started_clusters`, called by the root group).
Imports nothing of the command line's, so the error path can name the database too."""

from __future__ import annotations

import contextlib

import typer

from pokna.db import embedded
from pokna.settings import get_settings

_started: list[embedded.EmbeddedCluster] = []  # the embedded clusters this command started for itself


def configured_database_url() -> str:
    """POKNA_DATABASE_URL, or the data directory's private PostgreSQL, started if it is stopped (see
    `leave_started_clusters` for what happens to it after the command)."""
    settings = get_settings()
    if settings.database_url:
        return settings.database_url
    cluster = embedded.cluster_of(settings.data_dir, settings.postgres_bindir)
    if cluster.ensure_running():
        _started.append(cluster)
    return cluster.url


def leave_started_clusters(succeeded: bool) -> None:
    """After a command that started the embedded PostgreSQL for itself: left running for the next command,
    and said so in one line, if the command succeeded; stopped if it failed (its error is the one line)."""
    while _started:
        cluster = _started.pop()
        if succeeded:
            typer.echo(
                f"started the embedded PostgreSQL in {cluster.pgdata}; it stays up for the next command "
                "(`pokna db stop` stops it)",
                err=True,
            )
        else:
            with contextlib.suppress(embedded.EmbeddedDatabaseError):  # never instead of the command's error
                cluster.stop()
