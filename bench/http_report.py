"""The report of `bench/games_http.py`: medians over phases, and every phase against the frozen reference.

Each non-reference phase is divided by the mean of the reference phases just before and after it (the
run alternates them), so a drift in the machine's load moves both sides of a ratio alike; the ratios'
median is the headline figure.
"""

from __future__ import annotations

import sys
from typing import Any

from games_support import median

GROUPS = ("api", "postgres", "loadgen")
# What one phase kind counts as its rate, and the latency row that stands for it.
HEADLINE = {
    "games": ("actions_per_s", "action (all types)"),
    "deposits": ("requests_per_s", "deposit"),
    "baseline": ("requests_per_s", "baseline"),
    "reference": ("requests_per_s", "reference"),
}


def headline(kind: str) -> tuple[str, str]:
    """A phase kind's rate and latency row; `games@1` (a --compare-tenants phase) counts as `games`."""
    return HEADLINE[kind.split("@")[0]]


def _value(row: dict[str, Any], *path: str) -> float | None:
    value: Any = row
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return float(value) if isinstance(value, int | float) else None


def _median(rows: list[dict[str, Any]], *path: str) -> float:
    values = [v for row in rows if (v := _value(row, *path)) is not None]
    return median(values) if values else float("nan")


def against_reference(summaries: list[dict[str, Any]]) -> dict[str, list[float]]:
    """kind -> [rate / mean of the neighbouring reference phases' requests/s], one per phase of that kind."""
    ratios: dict[str, list[float]] = {}
    for index, row in enumerate(summaries):
        if row["kind"] == "reference":
            continue
        before = next((r for r in reversed(summaries[:index]) if r["kind"] == "reference"), None)
        after = next((r for r in summaries[index + 1 :] if r["kind"] == "reference"), None)
        neighbours = [r["requests_per_s"] for r in (before, after) if r is not None]
        if not neighbours:
            continue
        rate_key, _ = headline(row["kind"])
        ratios.setdefault(row["kind"], []).append(row[rate_key] / (sum(neighbours) / len(neighbours)))
    return ratios


def one_over_many(summaries: list[dict[str, Any]]) -> dict[str, list[float]]:
    """With --compare-tenants: kind -> [rate of a `kind@1` phase / mean of the `kind@N` phases (N > 1) just
    before and after it], one per one-tenant phase."""
    ratios: dict[str, list[float]] = {}
    for index, row in enumerate(summaries):
        kind, _, tenants = row["kind"].partition("@")
        if tenants != "1":
            continue

        def many(candidate: dict[str, Any], kind: str = kind) -> bool:
            other, _, count = candidate["kind"].partition("@")
            return other == kind and count not in ("", "1")

        before = next((r for r in reversed(summaries[:index]) if many(r)), None)
        after = next((r for r in summaries[index + 1 :] if many(r)), None)
        rate_key, _ = headline(row["kind"])
        neighbours = [r[rate_key] for r in (before, after) if r is not None]
        if neighbours:
            ratios.setdefault(kind, []).append(row[rate_key] / (sum(neighbours) / len(neighbours)))
    return ratios


def report(
    summaries: list[dict[str, Any]],
    settings: dict[str, Any],
    machine: dict[str, Any],
    problems: list[str],
    first_errors: list[str],
) -> dict[str, Any]:
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for row in summaries:
        by_kind.setdefault(row["kind"], []).append(row)
    games = [row for row in summaries if row["kind"].split("@")[0] == "games"]
    per_kind = {}
    for kind, rows in by_kind.items():
        rate_key, latency_key = headline(kind)
        per_kind[kind] = {
            "phases": len(rows),
            "rate_per_s": _median(rows, rate_key),
            "requests_per_s": _median(rows, "requests_per_s"),
            "p50_ms": _median(rows, "latency", latency_key, "p50_ms"),
            "p99_ms": _median(rows, "latency", latency_key, "p99_ms"),
            "cpu_ms_per_request": {group: _median(rows, "cpu_ms_per_request", group) for group in GROUPS},
            "load_1min": [rows[0]["load_1min"][0], rows[-1]["load_1min"][1]],
        }
    ratios = against_reference(summaries)
    kinds = sorted({kind for row in games for kind in row["latency"]})
    return {
        "settings": settings,
        "machine": machine,
        "phases": summaries,
        "median": per_kind,
        "games": {
            "games_per_s": _median(games, "games_per_s"),
            "actions_per_game": _median(games, "actions") / max(1.0, _median(games, "games")),
            "latency": {
                kind: {
                    "p50_ms": _median(games, "latency", kind, "p50_ms"),
                    "p99_ms": _median(games, "latency", kind, "p99_ms"),
                }
                for kind in kinds
            },
        },
        "ratio_to_reference": {
            kind: {"median": median(values), "per_phase": values} for kind, values in ratios.items()
        },
        "one_over_many_tenants": {
            kind: {"median": median(values), "per_phase": values}
            for kind, values in one_over_many(summaries).items()
        },
        "errors": sum(s["errors"] for s in summaries) + len(problems),
        "problems": problems,
        "first_errors": first_errors,
    }


def print_report(result: dict[str, Any]) -> None:
    out = sys.stdout
    settings = result["settings"]
    compared = settings.get("compare_tenants")
    tenants = f"1 and {compared}" if compared else settings["tenants"]
    print(
        f"\nclients={settings['clients']} workers={settings['workers']} phase={settings['duration_s']}s "
        f"rounds={settings['rounds']} players/game={settings['players_per_game']} tenants={tenants} "
        f"shared_wallets={settings['shared_wallets']} nproc={result['machine']['nproc']}",
        file=out,
    )
    print(
        f"\n{'phase':<10} {'secs':>6} {'req/s':>8} {'rate/s':>8} {'p50 ms':>7} {'p99 ms':>7} {'err':>4} "
        f"{'cpu ms/req api':>15} {'pg':>6} {'loadgen':>8} {'busy':>5} {'other':>5} {'load':>10}",
        file=out,
    )
    for row in result["phases"]:
        rate_key, latency_key = headline(row["kind"])
        latency = row["latency"].get(latency_key, {"p50_ms": float("nan"), "p99_ms": float("nan")})
        cpu = row["cpu_ms_per_request"]
        load = "{:.1f}-{:.1f}".format(*row["load_1min"])
        print(
            f"{row['kind']:<10} {row['seconds']:>6.1f} {row['requests_per_s']:>8.1f} {row[rate_key]:>8.1f} "
            f"{latency['p50_ms']:>7.1f} {latency['p99_ms']:>7.1f} {row['errors']:>4} {cpu['api']:>15.2f} "
            f"{cpu['postgres']:>6.2f} {cpu['loadgen']:>8.2f} {row['machine_busy_fraction']:>5.0%} "
            f"{row['other_processes_fraction']:>5.0%} {load:>10}",
            file=out,
        )
    print("\nmedians over phases (rate: actions/s for games, requests/s otherwise)", file=out)
    for kind, m in result["median"].items():
        cpu = m["cpu_ms_per_request"]
        print(
            f"  {kind:<10} {m['rate_per_s']:8.1f}/s  p50 {m['p50_ms']:6.1f} ms  p99 {m['p99_ms']:6.1f} ms  "
            f"CPU/request: api {cpu['api']:.2f} ms, postgres {cpu['postgres']:.2f} ms",
            file=out,
        )
    games = result["games"]
    if games["latency"]:
        print(
            f"  games: {games['games_per_s']:.2f}/s, {games['actions_per_game']:.1f} actions/game", file=out
        )
        for kind, latency in games["latency"].items():
            print(
                f"    {kind:<20} p50 {latency['p50_ms']:6.1f} ms   p99 {latency['p99_ms']:6.1f} ms", file=out
            )
    print("\nagainst the frozen reference (rate / mean of the neighbouring reference phases)", file=out)
    for kind, ratio in result["ratio_to_reference"].items():
        rounds = ", ".join(f"{value:.2f}" for value in ratio["per_phase"])
        print(f"  {kind:<10} {ratio['median']:.2f}x   (per phase: {rounds})", file=out)
    if result["one_over_many_tenants"]:
        print("\none tenant against many (rate of a one-tenant phase / mean of its neighbours)", file=out)
        for kind, ratio in result["one_over_many_tenants"].items():
            rounds = ", ".join(f"{value:.2f}" for value in ratio["per_phase"])
            print(f"  {kind:<10} {ratio['median']:.2f}x   (per phase: {rounds})", file=out)
    print(f"  errors: {result['errors']}", file=out)
    for error in result["first_errors"] + result["problems"]:
        print(f"    {error}", file=out)
