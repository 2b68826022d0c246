"""No PostgreSQL server of a test run outlives it (issue 37, item 10: two embedded servers started by CLI tests
were still running, orphaned, after a whole `make test`).

The controller names the run in the environment (`RUN_ENV`) before anything starts; every server a test
starts, through pg_ctl, the CLI or `pokna serve`, inherits it, so its postmaster can be told from the
servers of another run on the same machine by its environment alone. At the end the controller waits a
little for the workers' exit handlers, then names any postmaster of the run still up.
"""

from __future__ import annotations

import time
from pathlib import Path

RUN_ENV = "PYTEST_POKNA_RUN"  # not POKNA_*: the CLI tests drop those from the commands' environment


def _postmasters_of(run: str) -> dict[int, str]:
    """pid -> data directory of every postmaster whose environment names `run`."""
    marker = f"{RUN_ENV}={run}".encode()
    found: dict[int, str] = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if (proc / "comm").read_text().strip() != "postgres":
                continue
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            if b"-D" not in argv or marker not in (proc / "environ").read_bytes().split(b"\0"):
                continue  # a backend (its title rewritten) or another run's server
        except OSError:
            continue  # gone meanwhile, or not ours to read
        found[int(proc.name)] = argv[argv.index(b"-D") + 1].decode(errors="replace")
    return found


def servers_left(run: str, expected: set[str], wait_seconds: float = 30) -> dict[int, str]:
    """The run's postmasters still up after `wait_seconds`, other than those of `expected` data dirs."""
    deadline = time.monotonic() + wait_seconds
    while True:
        left = {
            pid: data
            for pid, data in _postmasters_of(run).items()
            if str(Path(data).resolve()) not in expected
        }
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.5)
