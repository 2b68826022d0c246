"""A burst of 64 concurrent clients (a keyed deposit, a wallet read and the trial balance each; 8 tenants)
against `pokna serve` on the embedded default, as `make run` starts it: a private PostgreSQL in a fresh
data directory, one worker. Prints each burst's answer times (median, p90, slowest) and statuses.

    .venv/bin/python bench/embedded_burst.py --bursts 5
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support.burst import CLIENTS, REQUESTS_PER_CLIENT, burst, opened_wallets, percentiles
from support.servers import serving


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bursts", type=int, default=5)
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="pokna-bench-"))  # outside pytest's tmp: the server's user enters it
    slowest = []
    with serving({"POKNA_DATABASE_URL": ""}, home / ".pokna") as server:
        keys, wallets = opened_wallets(server.base, home / ".pokna")
        for attempt in range(args.bursts):
            answers = burst(server.base, keys, wallets, attempt)
            figures = percentiles(answers)
            statuses = sorted({status for status, _ in answers})
            slowest.append(figures["slowest"])
            print(
                f"burst {attempt + 1}: {len(answers)} answers ({CLIENTS} clients x {REQUESTS_PER_CLIENT}), "
                f"statuses {statuses}, median {figures['median']:.3f} s, p90 {figures['p90']:.3f} s, "
                f"slowest {figures['slowest']:.3f} s"
            )
    print(f"median of the bursts' slowest answers: {statistics.median(slowest):.3f} s")


if __name__ == "__main__":
    main()
