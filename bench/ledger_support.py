"""Shared set-up for the ledger benchmarks: a throwaway PostgreSQL cluster and a migrated database."""

from __future__ import annotations

import statistics
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from pokna.db import migrate  # noqa: E402
from support.postgres import start_cluster  # noqa: E402


@contextmanager
def migrated_postgres(
    existing_url: str | None = None, *, durable: bool = False, extra_options: str = ""
) -> Iterator[str]:
    """A fresh database at head: on `existing_url`'s server, or on a throwaway cluster removed afterwards
    (`durable`: committing synchronously, as production runs: support.postgres.Cluster.durable;
    `extra_options`: more `-c name=value` server settings, after the harness's own)."""
    cluster = None
    if existing_url is None:
        cluster = start_cluster(durable=durable, extra_options=extra_options)
        existing_url = cluster.url
    name = f"pokna_bench_{uuid.uuid4().hex[:8]}"
    admin = create_engine(existing_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as connection:
            connection.execute(text(f'CREATE DATABASE "{name}"'))
        url = make_url(existing_url).set(database=name).render_as_string(hide_password=False)
        migrate.upgrade(url)
        yield url
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
        if cluster is not None:
            cluster.stop()


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


def median(values: list[float]) -> float:
    return statistics.median(values)
