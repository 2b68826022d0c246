"""Watching what leaves the async road (issue 43): SQLAlchemy connections, and work handed to a thread.

Watched on the libraries, from outside: every SQLAlchemy pool's checkouts (any engine's, one the code made
for itself included), every call handed to a thread pool (asyncio's `to_thread` and `run_in_executor`,
anyio's `to_thread`, which Starlette's `run_in_threadpool` is), and every thread started to run the
service's own code (the statement watchdog's one thread per process aside: it watches, it runs no work)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import anyio.to_thread
import pytest
from sqlalchemy import event
from sqlalchemy.pool import Pool

WATCHDOG = "pokna.db.watchdog"


class Detours:
    """What left the async road while watched: SQLAlchemy checkouts, and calls that went to a thread."""

    def __init__(self) -> None:
        self.checkouts = 0
        self.threads: list[str] = []

    def _checkout(self, *_: Any) -> None:
        self.checkouts += 1

    def _handed(self, work: Any) -> None:
        self.threads.append(f"{getattr(work, '__module__', '?')}.{getattr(work, '__qualname__', work)}")


@contextmanager
def watched(monkeypatch: pytest.MonkeyPatch) -> Iterator[Detours]:
    detours = Detours()
    submit, run_sync, start = ThreadPoolExecutor.submit, anyio.to_thread.run_sync, threading.Thread.start

    def submitted(executor: ThreadPoolExecutor, work: Any, /, *args: Any, **kwargs: Any) -> Any:
        detours._handed(work)
        return submit(executor, work, *args, **kwargs)

    async def run_in_thread(work: Any, *args: Any, **kwargs: Any) -> Any:
        detours._handed(work)
        return await run_sync(work, *args, **kwargs)

    def started(thread: threading.Thread) -> None:
        work = getattr(thread, "_target", None)
        module = getattr(work, "__module__", "") or ""
        if module.startswith("pokna") and module != WATCHDOG:
            detours._handed(work)
        start(thread)

    monkeypatch.setattr(ThreadPoolExecutor, "submit", submitted)
    monkeypatch.setattr(anyio.to_thread, "run_sync", run_in_thread)
    monkeypatch.setattr(threading.Thread, "start", started)
    event.listen(Pool, "checkout", detours._checkout)
    try:
        yield detours
    finally:
        event.remove(Pool, "checkout", detours._checkout)
