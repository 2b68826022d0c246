"""A CPU budget per server: one cgroup each, with a CFS quota, and its CPU time and throttling read back.

Two cores shared by every node cannot show that a node more adds throughput: whichever node is busiest
takes the cores from the others. A quota gives each node a machine of its own size (0.2 CPU is a fifth of
one core every 100 ms period, whatever else runs), so the nodes' quotas, not the machine, set the ceiling.

The server joins its cgroup before it starts: the command that starts it goes through `launcher()`, a
shell that writes its own pid into the cgroup and then execs the command, so the postmaster and every
backend it forks later are in it (moving a running postmaster would leave its existing children out).

cgroup v1 (`cpu` and `cpuacct`, mounted apart or together) and v2 (`cpu.max`) are supported; writing them
needs root. `available()` says why not when neither can be used, and the bench then refuses to run.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import time
from dataclasses import dataclass
from pathlib import Path

CGROUP = Path("/sys/fs/cgroup")
PERIOD_US = 100_000


def _v2() -> bool:
    return (CGROUP / "cgroup.controllers").exists()


def available() -> str | None:
    """None if budgets can be made here, else why not."""
    if os.geteuid() != 0:
        return "cgroups are written by root only"
    if _v2():
        if "cpu" not in (CGROUP / "cgroup.controllers").read_text().split():
            return f"cgroup v2 at {CGROUP} has no cpu controller"
        return None
    if not (CGROUP / "cpu" / "cpu.cfs_quota_us").exists():
        return f"neither cgroup v2 ({CGROUP}/cgroup.controllers) nor v1's cpu controller ({CGROUP}/cpu)"
    if not (CGROUP / "cpuacct" / "cpuacct.usage").exists():
        return f"cgroup v1 without the cpuacct controller ({CGROUP}/cpuacct)"
    if not os.access(CGROUP / "cpu", os.W_OK):
        return f"{CGROUP}/cpu is not writable"
    return None


@dataclass(frozen=True)
class Throttling:
    periods: int
    throttled: int


@dataclass
class Budget:
    """One node's cgroup: in v1 a folder in the `cpu` hierarchy and one in `cpuacct` (the same one when
    they are mounted together), in v2 one folder."""

    name: str
    folders: list[Path]

    @classmethod
    def create(cls, name: str) -> Budget:
        if _v2():
            with contextlib.suppress(OSError):  # already on, or set by whoever owns the machine
                (CGROUP / "cgroup.subtree_control").write_text("+cpu")
            folders = [CGROUP / name]
        else:
            # `cpu` and `cpuacct` may be one hierarchy under two names (symbolic links to `cpu,cpuacct`).
            roots = dict.fromkeys(((CGROUP / "cpu").resolve(), (CGROUP / "cpuacct").resolve()))
            folders = [root / name for root in roots]
        budget = cls(name, [])
        try:
            for folder in folders:
                folder.mkdir()
                budget.folders.append(folder)
        except BaseException:
            budget.remove()
            raise
        return budget

    def launcher(self) -> list[str]:
        """A command prefix: runs the rest of the command line inside this cgroup."""
        procs = " ".join(shlex.quote(str(folder / "cgroup.procs")) for folder in self.folders)
        return ["sh", "-c", f'echo $$ | tee {procs} >/dev/null && exec "$@"', "sh"]

    def limit(self, cpus: float | None) -> None:
        """At most `cpus` CPUs (0.25: a quarter of one core), or none (None)."""
        folder = self.folders[0]
        quota = None if cpus is None else max(1000, round(cpus * PERIOD_US))
        if _v2():
            (folder / "cpu.max").write_text(f"{quota or 'max'} {PERIOD_US}")
            return
        (folder / "cpu.cfs_period_us").write_text(str(PERIOD_US))
        (folder / "cpu.cfs_quota_us").write_text(str(quota or -1))

    def adopt(self, pid: int) -> None:
        """Move a running process and every descendant into the cgroup (one that forks no more later)."""
        for folder in self.folders:
            (folder / "cgroup.procs").write_text(str(pid))
        for task in Path(f"/proc/{pid}/task").iterdir():
            for child in (task / "children").read_text().split():
                self.adopt(int(child))

    def weigh(self, processes: int) -> None:
        """Weigh as `processes` ordinary processes when the machine is short of CPU. Outside a cgroup each
        of a server's busy backends competes for the cores on its own; inside one the cgroup competes
        as one, so on a machine others load too the node would get less than its quota."""
        folder = self.folders[0]
        if _v2():
            (folder / "cpu.weight").write_text(str(min(10_000, 100 * processes)))
            return
        (folder / "cpu.shares").write_text(str(1024 * processes))

    def cpu_seconds(self) -> float:
        if _v2():
            return self._stat()["usage_usec"] / 1e6
        return int((self.folders[-1] / "cpuacct.usage").read_text()) / 1e9

    def throttling(self) -> Throttling:
        stat = self._stat()
        return Throttling(stat["nr_periods"], stat["nr_throttled"])

    def _stat(self) -> dict[str, int]:
        lines = (self.folders[0] / "cpu.stat").read_text().splitlines()
        return {name: int(value) for name, value in (line.split() for line in lines)}

    def pids(self) -> list[int]:
        procs = [folder / "cgroup.procs" for folder in self.folders[:1] if folder.exists()]
        return [int(pid) for path in procs for pid in path.read_text().split()]

    def remove(self) -> list[str]:
        """Remove the cgroup once its processes are gone (a stopped server's backends take a moment);
        after 10 s the ones left (they can only be this node's) are killed. What could not be removed."""
        deadline = time.monotonic() + 10
        while self.pids() and time.monotonic() < deadline:
            time.sleep(0.1)
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        problems = []
        for folder in reversed(self.folders):
            for _attempt in range(50):
                if not folder.exists():
                    break
                try:
                    folder.rmdir()
                    break
                except OSError as error:
                    problem = f"{folder}: {error}"
                    time.sleep(0.1)
            else:
                problems.append(problem)
        return problems
