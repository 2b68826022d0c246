"""How far a long command has got, on stderr: `pokna-verify audit` (and `pokna audit verify`, `pokna audit
report`) reading a large file, and the service's `pokna ledger export` and `pokna audit bundle` writing one."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable
from typing import TextIO

_clock = time.monotonic  # read at each call: the tests move it


class StderrProgress:
    """How far a long command has got, on one stderr line rewritten in place: shown once the command has
    run for a second (a quick command says nothing), at most four times a second, and only when stderr is a
    terminal unless `enabled` says otherwise (--progress/--no-progress). stdout, the command's answer, is
    never touched."""

    _AFTER_SECONDS = 1.0
    _EVERY_SECONDS = 0.25

    def __init__(self, enabled: bool | None = None) -> None:
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self._started = _clock()
        self._shown_at: float | None = None

    def show(self, progress: str) -> None:
        """`progress` as "12,000 records read"; cheap enough to call for every line."""
        if not self.enabled:
            return
        now = _clock()
        if now - self._started < self._AFTER_SECONDS:
            return
        if self._shown_at is not None and now - self._shown_at < self._EVERY_SECONDS:
            return
        self._shown_at = now
        print(f"\r  {progress} ...", end="", file=sys.stderr, flush=True)

    def done(self) -> None:
        if self._shown_at is not None:
            print(file=sys.stderr)
            self._shown_at = None

    def written(self, chunks: Iterable[str], handle: TextIO) -> None:
        """Write `chunks` to `handle`, saying how many lines and MiB are written so far."""
        lines = size = 0
        try:
            for chunk in chunks:
                handle.write(chunk)
                lines += chunk.count("\n")
                size += len(chunk)
                self.show(f"{lines:,} lines, {size / 2**20:,.0f} MiB written")
        finally:
            self.done()
