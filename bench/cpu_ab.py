"""Two checkouts' API CPU per request, measured in one run: bench/action_cpu.py (unprofiled) run against
each tree's code in turn, alternating, several rounds, so that a shared, noisy machine weighs on both
alike; prints each round's figures, then the medians and their ratio (second tree over first).

    .venv/bin/python bench/cpu_ab.py BASE_TREE NEW_TREE [--rounds 5] [--games 100] [--deposits 300] [--keyed]

A tree is a checkout's root (a `git worktree add --detach` of the commit to compare with, say); its
`service/` and `verifier/` are imported, this checkout's `bench/` drives both.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
FIGURES = {
    "action": re.compile(r"API CPU ([0-9.]+) ms an action"),
    "creation": re.compile(r"([0-9.]+) ms a creation"),
    "deposit": re.compile(r"API CPU ([0-9.]+) ms a deposit"),
}


def measure(tree: Path, options: argparse.Namespace) -> dict[str, float]:
    command = [sys.executable, str(BENCH / "action_cpu.py"), "--games", str(options.games), "--no-profile"]
    command += ["--deposits", str(options.deposits)] + (["--keyed"] if options.keyed else [])
    path = os.pathsep.join([str(tree / "service"), str(tree / "verifier"), str(BENCH)])
    done = subprocess.run(
        command, env={**os.environ, "PYTHONPATH": path}, capture_output=True, text=True, check=True
    )
    return {
        name: float(found[1]) for name, pattern in FIGURES.items() if (found := pattern.search(done.stdout))
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("trees", nargs=2, type=Path)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--games", type=int, default=100)
    parser.add_argument("--deposits", type=int, default=300)
    parser.add_argument("--keyed", action="store_true", help="an Idempotency-Key on every game request")
    options = parser.parse_args()
    runs: list[list[dict[str, float]]] = [[], []]
    for round_number in range(options.rounds):
        for index, tree in enumerate(options.trees):
            figures = measure(tree, options)
            runs[index].append(figures)
            shown = ", ".join(f"{name} {value:.3f} ms" for name, value in figures.items())
            print(f"round {round_number + 1} {tree.name}: {shown}", flush=True)
    print(
        f"\nmedians over {options.rounds} rounds ({'keyed' if options.keyed else 'unkeyed'} game requests):"
    )
    for name in FIGURES:
        medians = [statistics.median(run[name] for run in tree_runs if name in run) for tree_runs in runs]
        print(f"  {name}: {medians[0]:.3f} ms -> {medians[1]:.3f} ms ({medians[1] / medians[0]:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
