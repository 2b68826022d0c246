"""How long `pokna` takes to start: the median of N starts of `pokna --help`, `pokna verify --help` and
`pokna roll ...`, for this checkout and (with --before REF) for another commit, alternating run by run so
that both see the same load.

    .venv/bin/python bench/cli_startup.py --runs 20 --before 2fc6ba8

Each start is `python -c "from pokna.cli import main; main()" ARGS` (what the `pokna` script runs) with
PYTHONPATH at the code under test: `service/` of this checkout, or `git archive REF service` unpacked in
a temporary directory. Dependencies are this venv's in both cases.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SEED = "ab" * 32
COMMANDS = {
    "pokna --help": ["--help"],
    "pokna verify --help": ["verify", "--help"],
    "pokna roll": ["roll", "--server-seed", SEED, "--client-seed", "bench", "--nonce", "0"],
}
RUNNER = "import sys; sys.argv[0] = 'pokna'; from pokna.cli import main; sys.exit(main())"


def _start(source: Path, args: list[str]) -> float:
    env = {**os.environ, "PYTHONPATH": str(source)}
    began = time.perf_counter()
    subprocess.run([sys.executable, "-c", RUNNER, *args], env=env, capture_output=True, check=True)
    return time.perf_counter() - began


def _unpack(ref: str, into: Path) -> Path:
    archive = subprocess.run(["git", "archive", ref, "service"], cwd=ROOT, capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into / "service"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--before", metavar="REF", help="Also time this commit, e.g. the base of a branch.")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        sources = {"after": ROOT / "service"}
        if options.before:
            sources = {"before": _unpack(options.before, Path(scratch)), **sources}
        times: dict[tuple[str, str], list[float]] = {(c, s): [] for c in COMMANDS for s in sources}
        for name, args in COMMANDS.items():
            for source in sources.values():
                _start(source, args)  # warm the page cache and the bytecode
            for _ in range(options.runs):
                for label, source in sources.items():
                    times[name, label].append(_start(source, args))
    load = os.getloadavg()[0]
    print(f"median of {options.runs} starts (load average {load:.1f}, {os.cpu_count()} cores)")
    print("| command | " + " | ".join(f"{label} (s)" for label in sources) + " |")
    print("| --- | " + " | ".join("---:" for _ in sources) + " |")
    for name in COMMANDS:
        medians = [f"{statistics.median(times[name, label]):.3f}" for label in sources]
        print(f"| `{name}` | " + " | ".join(medians) + " |")


if __name__ == "__main__":
    main()
