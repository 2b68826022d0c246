"""`pokna audit report` at volume: a bundle of N games written offline by bench/audit_bundle_volume.py (the
pure rules play each game, proofs signed, journal hash-chained as the service does), then the report timed
as a child process beside `pokna audit verify` on the same bundle, with the process tree's memory sampled
every 100 ms (audit_bundle_volume.measure).

    .venv/bin/python bench/audit_report.py --games 10000 --processes 2 --bundle /tmp/report-bench/bundle.jsonl

--policy claim-split plays every game one way (a lone survivor claims, survivors split), so the report tests
RTP against the exact odds; mixed (audit_bundle_volume's default: 30 % roll-again votes, 40 % challenges)
gives a table no one policy describes, shown but not tested. With --bundle the bundle is kept and reused.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from audit_bundle_volume import MIXED, build, measure

POLICIES = {"claim-split": (0.0, 0.0), "mixed": MIXED}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--games", type=int, default=10_000)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--policy", choices=sorted(POLICIES), default="claim-split")
    parser.add_argument("--bundle", type=Path, help="Keep the bundle here (and reuse it when it exists).")
    parser.add_argument("--pokna", default=str(Path(sys.executable).with_name("pokna")))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        bundle = args.bundle or Path(directory, "bundle.jsonl")
        if not bundle.exists():
            build(bundle, args.games, args.processes, POLICIES[args.policy])
        load = Path("/proc/loadavg").read_text().split()[:3]
        page, figures = Path(directory, "report.html"), Path(directory, "report.json")
        keys = ["--keys", f"{bundle}.keys", "--processes", str(args.processes)]
        verify = measure([args.pokna, "audit", "verify", str(bundle), "--json", *keys])
        made = measure(
            [args.pokna, "audit", "report", str(bundle), "--html", str(page), "--json", str(figures), *keys],
            answers_json=False,
        )
        document = json.loads(figures.read_text())
        print(f"load average before: {load}; bundle {bundle.stat().st_size / 2**20:.0f} MiB")
        for name, run in (("verify", verify), ("report", made)):
            print(
                f"{name}: {run.seconds:.1f} s wall, {run.cpu_seconds:.1f} s CPU, peak memory "
                f"{run.peak_tree_rss_mb:.0f} MB RSS of the process tree, {run.peak_tree_pss_mb:.0f} MB PSS, "
                f"{run.peak_process_mb:.0f} MB largest process"
            )
        testing = document["testing"]
        print(
            f"report: {document['period']['games']:,} games, {document['rng']['rolls']:,} rolls, "
            f"{testing['tests_run']} tests, {testing['flags']} flagged; page {page.stat().st_size / 1024:.0f} KiB"
        )
        print(made.output.strip())


if __name__ == "__main__":
    main()
