"""Two checkouts' API CPU per request (and PostgreSQL's per game action), measured in one run, burst against
burst: bench/action_cpu.py (unprofiled, `--bursts`) runs once per tree, each on its own throwaway cluster and warmed up, and the two
play short bursts in turn (A, B, B, A, A, B, ...), so that a shared, noisy machine weighs on both alike
within seconds; prints the median and the fastest burst of each tree's CPU per request kind and their
ratio (second tree over first), with the ratio's spread over burst pairs. On a loaded machine the fastest
burst (the least disturbed, and each tree has had as many chances at a quiet moment) is the steadier figure.

    .venv/bin/python bench/cpu_ab.py BASE_TREE NEW_TREE [--bursts 20] [--games 10] [--deposits 40] [--keyed]

A tree is a checkout's root (a `git worktree add --detach` of the commit to compare with, say); its
`service/` and `verifier/` are imported and its own `bench/action_cpu.py` drives it, which must know
`--bursts` (for a commit older than that option, check out this bench's action_cpu.py and games_http.py
of commit 5bff611 into the tree: they drive the service as it was before its commands went async).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

KINDS = ("action", "creation", "deposit", "postgres")
# `postgres`: the cluster's CPU (all its processes) over a burst's games, per action with the creations shared
# out; only from an action_cpu.py that reports it.


def start(tree: Path, options: argparse.Namespace) -> subprocess.Popen[str]:
    # The tree's own bench drives it: its setup (tenants, wallets) calls the tree's own functions, which
    # change between commits; what is timed, the app's ASGI call, is the same loop in both.
    bench = tree / "bench"
    command = [sys.executable, str(bench / "action_cpu.py"), "--bursts", "--games", str(options.games)]
    command += ["--deposits", str(options.deposits)] + (["--keyed"] if options.keyed else [])
    path = os.pathsep.join([str(tree / "service"), str(tree / "verifier"), str(bench)])
    worker = subprocess.Popen(
        command,
        env={**os.environ, "PYTHONPATH": path},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    _answer(worker)  # up, migrated, warmed
    return worker


def _answer(worker: subprocess.Popen[str]) -> dict[str, Any]:
    assert worker.stdout is not None
    while line := worker.stdout.readline():
        if line.startswith("{"):
            answer: dict[str, Any] = json.loads(line)
            return answer
    raise RuntimeError(f"the bench process ended (exit status {worker.wait()})")


def burst(worker: subprocess.Popen[str]) -> dict[str, float]:
    assert worker.stdin is not None
    worker.stdin.write("burst\n")
    worker.stdin.flush()
    return _answer(worker)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("trees", nargs=2, type=Path)
    parser.add_argument("--bursts", type=int, default=20, help="bursts per tree")
    parser.add_argument("--games", type=int, default=10, help="games per burst")
    parser.add_argument("--deposits", type=int, default=40, help="keyed deposits per burst")
    parser.add_argument("--keyed", action="store_true", help="an Idempotency-Key on every game request")
    options = parser.parse_args()
    workers = [start(tree, options) for tree in options.trees]
    runs: list[list[dict[str, float]]] = [[], []]
    try:
        for number in range(options.bursts):
            order = (0, 1) if number % 2 == 0 else (1, 0)  # A B, B A, ...: neither always goes first
            for index in order:
                runs[index].append(burst(workers[index]))
    finally:
        for worker in workers:
            assert worker.stdin is not None
            worker.stdin.close()
            worker.wait(timeout=120)
    kind_of = "keyed" if options.keyed else "unkeyed"
    print(
        f"{options.bursts} bursts a tree of {options.games} games ({kind_of}) and {options.deposits} deposits:"
    )
    for kind in KINDS:
        if not all(kind in run for tree_runs in runs for run in tree_runs):
            continue
        medians = [statistics.median(run[kind] for run in tree_runs) for tree_runs in runs]
        fastest = [min(run[kind] for run in tree_runs) for tree_runs in runs]
        ratios = sorted(b[kind] / a[kind] for a, b in zip(*runs, strict=True))
        quartiles = statistics.quantiles(ratios, n=4)
        print(
            f"  {kind}: median {medians[0]:.3f} ms -> {medians[1]:.3f} ms ({medians[1] / medians[0]:.2f}x); "
            f"fastest burst {fastest[0]:.3f} ms -> {fastest[1]:.3f} ms ({fastest[1] / fastest[0]:.2f}x); "
            f"burst pairs' ratio median {statistics.median(ratios):.2f}x, quartiles {quartiles[0]:.2f}-"
            f"{quartiles[2]:.2f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
