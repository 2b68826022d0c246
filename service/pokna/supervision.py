"""A worker of `pokna serve` ends when its supervisor does, however the supervisor ended.

uvicorn's supervisor stops its workers when it is told to stop (SIGTERM, SIGINT). Killed outright (SIGKILL,
the OOM killer, a crash), it tells them nothing: they went on serving on the port, orphaned, and the next
`pokna serve` there was refused ("port … already in use") until someone found and killed them (issue 46,
L5). So the supervisor names itself to the workers it starts (`supervising`), and each worker, as it
starts, asks to be sent SIGTERM when its parent ends (`end_with_supervisor`): the graceful shutdown a
SIGTERM from the supervisor would have begun, so requests in flight are still answered."""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

SUPERVISOR_VARIABLE = "POKNA_SUPERVISOR_PID"
"""Set by the supervisor for the workers it starts, which inherit its environment."""
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
WATCH_SECONDS = 1.0
"""How often a worker without PR_SET_PDEATHSIG (not Linux) looks for its supervisor."""

log = logging.getLogger("pokna.serve")


@contextmanager
def supervising() -> Iterator[None]:
    """Around the start of the workers: each one started inside ends with this process."""
    os.environ[SUPERVISOR_VARIABLE] = str(os.getpid())
    try:
        yield
    finally:
        os.environ.pop(SUPERVISOR_VARIABLE, None)


def end_with_supervisor() -> None:
    """In a worker as it starts (a no-op in a process no supervisor started): SIGTERM to itself once its
    supervisor is gone. On Linux the kernel sends it (PR_SET_PDEATHSIG: at once, even if the worker is
    busy); elsewhere a thread looks for the supervisor every `WATCH_SECONDS`. The pid is the supervisor's
    own word, not the worker's parent at this moment: a supervisor killed before this ran would otherwise
    make the process that adopted the worker its supervisor."""
    named = os.environ.get(SUPERVISOR_VARIABLE)
    if not named:
        return
    supervisor = int(named)
    if not _kernel_signals_parent_death():
        threading.Thread(target=_watch, args=(supervisor,), name="supervisor-watch", daemon=True).start()
    if os.getppid() != supervisor:  # it ended before the kernel was asked
        _supervisor_gone(supervisor)


def _kernel_signals_parent_death() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    return bool(libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) == 0)


def _watch(supervisor: int) -> None:
    while os.getppid() == supervisor:
        time.sleep(WATCH_SECONDS)
    _supervisor_gone(supervisor)


def _supervisor_gone(supervisor: int) -> None:
    log.warning("the supervisor (pid %d) has ended; this worker shuts down", supervisor)
    os.kill(os.getpid(), signal.SIGTERM)
