"""What the service reports for `/metrics`: one call per event, from one place in each domain.

The domains (the dealer, the ledger) and the HTTP edge call these functions; they do nothing until a
process that serves `/metrics` installs a recorder (`pokna.api.metrics.enable`). So a `pokna` command
never imports prometheus-client (it costs ~0.1 s of start-up), and the domains do not know how the
numbers are kept. docs/metrics.md lists every metric.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

MULTIPROCESS_DIR_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"
"""prometheus-client's multiprocess mode: each process writes its values to files in this directory and
`/metrics` adds them up, whichever worker answers the scrape."""


class Recorder:
    """What keeps the numbers. This one records nothing: a process has it until it installs one."""

    def http_request(self, method: str, route: str, status: int, seconds: float) -> None:
        return None

    def idempotent_replay(self, route: str) -> None:
        return None

    def game_action(self, action_type: str, result: str) -> None:
        return None

    def game_finished(self, outcome: str) -> None:
        return None

    def ledger_posted(self, transactions: int, seconds: float) -> None:
        return None

    def db_gate_places(self, places: int) -> None:
        return None

    def db_gate_waiting(self, change: int) -> None:
        return None

    def db_gate_waited(self, seconds: float, timed_out: bool) -> None:
        return None

    def db_connections_checked_out(self, change: int) -> None:
        return None


_recorder = Recorder()


def record_with(recorder: Recorder) -> None:
    global _recorder  # one per process, like the registry it writes to
    _recorder = recorder


def http_request(method: str, route: str, status: int, seconds: float) -> None:
    """`route` is the route's template (`/v1/games/{game_id}`), never the raw path: ids would make a
    label value per game, and a public fairness link's path is its capability."""
    _recorder.http_request(method, route, status, seconds)


def idempotent_replay(route: str) -> None:
    _recorder.idempotent_replay(route)


def game_action(action_type: str, result: str) -> None:
    """`result` is `ok` or the refusal's stable error code."""
    _recorder.game_action(action_type, result)


def game_finished(outcome: str) -> None:
    """`outcome` is the settle reason (`claimed`, `split`, ...) or `cancelled`."""
    _recorder.game_finished(outcome)


def ledger_posted(transactions: int, seconds: float) -> None:
    _recorder.ledger_posted(transactions, seconds)


def db_gate_places(places: int) -> None:
    """The places of this process's database gate (its pool's connections)."""
    _recorder.db_gate_places(places)


def db_gate_waiting(change: int) -> None:
    """+1 when a request starts waiting in the gate's queue, -1 when it stops (a place, a timeout, a
    client that left)."""
    _recorder.db_gate_waiting(change)


def db_gate_waited(seconds: float, timed_out: bool) -> None:
    """One request's wait for a place, 0 for one that found a place free; `timed_out` for a wait that
    ended in the 503."""
    _recorder.db_gate_waited(seconds, timed_out)


def db_connections_checked_out(change: int) -> None:
    """+1 when a connection is taken from one of the process's psycopg pools (pokna.db.aio), -1 when it is
    given back."""
    _recorder.db_connections_checked_out(change)


@contextmanager
def shared_by_workers(workers: int) -> Iterator[None]:
    """Makes several worker processes count into one set of metrics, for as long as they run.

    With more than one worker and no `PROMETHEUS_MULTIPROC_DIR` set, a fresh directory is made (and
    removed afterwards); a directory set by the operator is emptied first, since values left by an
    earlier run would be added to this one's. Workers inherit the variable, so it must be set before
    they start (prometheus-client reads it when it is first imported)."""
    configured = os.environ.get(MULTIPROCESS_DIR_VARIABLE)
    if configured:
        Path(configured).mkdir(parents=True, exist_ok=True)
        for leftover in Path(configured).glob("*.db"):
            leftover.unlink()
        yield
        return
    if workers < 2:
        yield
        return
    directory = tempfile.mkdtemp(prefix="pokna-metrics-")
    os.environ[MULTIPROCESS_DIR_VARIABLE] = directory
    try:
        yield
    finally:
        os.environ.pop(MULTIPROCESS_DIR_VARIABLE, None)
        shutil.rmtree(directory, ignore_errors=True)
