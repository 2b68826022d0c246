"""The files a game action's walk passes through (issue 43's "route to COMMIT, service side"), read from a
profile of real requests: every function reached from the route's own function in the profile's call graph,
grouped by the file it lives in.

    .venv/bin/python bench/action_cpu.py --games 10 --keyed --profile action --dump /tmp/action.prof
    .venv/bin/python bench/action_walk.py /tmp/action.prof [--route dealer/routes.py:act] [--verifier]

A file is counted when any of its functions ran under the route (a module that only declares dataclasses or
constants is read too, but calls nothing: it is not counted, as no trace would count it). The walk starts at
the route's function, so the HTTP server, the edge's middleware and the dependencies FastAPI solves before
the route runs are not in it; what the route itself calls is, the kernel's included. `--verifier` lists
`pokna_verify`'s files too (the rules, rolls and signatures the service calls).
"""

from __future__ import annotations

import argparse
import pstats
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

KERNEL = ("api/", "db/", "idempotency/", "metrics/", "tenants/")
"""The files every authenticated request's route passes through, whichever domain it is in."""


def reached(stats: dict[Any, Any], route_file: str, route_name: str) -> set[Any]:
    """Every function called, at any depth, by the route's function."""
    callees: dict[Any, set[Any]] = defaultdict(set)
    for function, (*_counts, callers) in stats.items():
        for caller in callers:
            callees[caller].add(function)
    start = [f for f in stats if f[2] == route_name and f[0].endswith(route_file)]
    if not start:
        raise SystemExit(f"no {route_file}:{route_name} in the profile")
    seen, waiting = set(start), list(start)
    while waiting:
        for callee in callees[waiting.pop()]:
            if callee not in seen:
                seen.add(callee)
                waiting.append(callee)
    return seen


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("profile", type=Path, help="a pstats dump (bench/action_cpu.py --dump)")
    parser.add_argument("--route", default="dealer/routes.py:act", help="the route's file and function")
    parser.add_argument("--verifier", action="store_true", help="list pokna_verify's files too")
    options = parser.parse_args()
    route_file, route_name = options.route.rsplit(":", 1)
    stats = pstats.Stats(str(options.profile)).stats  # type: ignore[attr-defined]
    files: dict[str, set[str]] = defaultdict(set)
    for filename, _line, name in reached(stats, f"/pokna/{route_file}", route_name):
        for package in ("/pokna/", "/pokna_verify/"):
            if package in filename and (package == "/pokna/" or options.verifier):
                files[package.strip("/") + "/" + filename.split(package, 1)[1]].add(name)
    service = sorted(f for f in files if f.startswith("pokna/"))
    kernel = [f for f in service if f.removeprefix("pokna/").startswith(KERNEL)]
    for path in sorted(files):
        shown = ", ".join(sorted(n for n in files[path] if not n.startswith("<")))
        print(f"{path:48} {shown}")
    print(
        f"service: {len(service)} files ({len(service) - len(kernel)} the domains', {len(kernel)} the kernel's: "
        f"{', '.join(KERNEL)})"
        + (f"; verifier: {len(files) - len(service)} files" if options.verifier else "")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
