"""The period report's charts, drawn by matplotlib's SVG backend from the report's JSON document alone.

Text stays text (svg.fonttype 'none') in a generic sans-serif family, so the page needs no font file;
each chart is sized for a phone's width and scales with the page (pokna.report_page.page). Figures are
made without pyplot: no global state, nothing shown, nothing written but the returned SVG text.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from html import escape
from math import floor, log10, sqrt
from typing import Any

import matplotlib
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

INK, MUTED, GRID = "#1d2430", "#5b6472", "#d9dee5"
REALIZED, FLAGGED, BAND, EXPECTED = "#1f5fa8", "#b3261e", "#cfdcec", "#1d2430"
WIDTH = 4.2  # inches: about 400 px at the page's scale, so that a phone shows the text near its size
_STYLE: dict[str, Any] = {
    "svg.fonttype": "none",
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans"],  # what matplotlib measures with; the SVG falls back to sans-serif
    "font.size": 11,
    "axes.edgecolor": MUTED,
    "axes.labelcolor": INK,
    "xtick.color": MUTED,
    "ytick.color": MUTED,
    "text.color": INK,
    "axes.titlesize": 11.5,
    "axes.titlelocation": "left",
}
_NO_METADATA = {"Date": None, "Creator": None, "Format": None, "Type": None}


def _rc(name: str) -> Any:
    """The style, with each chart's own salt for the ids matplotlib hashes (a page holds several charts)."""
    return _STYLE | {"svg.hashsalt": f"pokna-{name}"}


@contextmanager
def _figure(name: str, height: float) -> Iterator[Figure]:
    with matplotlib.rc_context(_rc(name)):
        yield Figure(figsize=(WIDTH, height), layout="constrained")


def _svg(figure: Figure, name: str, title: str) -> str:
    """The figure as an inline <svg>: no XML prologue, scalable, its ids its own, titled for screen readers."""
    with matplotlib.rc_context(_rc(name)):
        buffer = io.StringIO()
        figure.savefig(buffer, format="svg", metadata=_NO_METADATA)
    text = buffer.getvalue()
    text = text[text.index("<svg") :]
    text = re.sub(
        r'<svg ([^>]*?)width="[^"]*" height="[^"]*"', r'<svg \1class="chart" role="img"', text, count=1
    )
    text = (
        text.replace('id="', f'id="{name}-')
        .replace('href="#', f'href="#{name}-')
        .replace("url(#", f"url(#{name}-")
    )
    return text.replace(">", f"><title>{escape(title, quote=False)}</title>", 1)


def rtp_chart(tables: Sequence[dict[str, Any]]) -> str | None:
    """One row per tested side: the interval chance allows (band), the theoretical RTP (tick), the
    realized one (dot, red when flagged)."""
    rows = [
        (table, side)
        for table in tables
        for side in table["sides"]
        if side["interval"] is not None and side["rtp"] is not None
    ]
    if not rows:
        return None
    with _figure("rtp", 0.3 + 1.05 * len(rows)) as figure:
        axes = figure.subplots(len(rows), 1, squeeze=False)[:, 0]
        for ax, (table, side) in zip(axes, rows, strict=True):
            _rtp_row(ax, table, side)
        return _svg(figure, "rtp", "Realized RTP against the interval chance allows, per table and side")


def _rtp_row(ax: Axes, table: dict[str, Any], side: dict[str, Any]) -> None:
    low, high = side["interval"]["low"], side["interval"]["high"]
    theory = side["theoretical"]
    realized, flagged = side["rtp"], side["test"]["flagged"]
    ax.axvspan(low, high, color=BAND, lw=0)
    ax.axvline(theory["low"], color=EXPECTED, lw=1.6)
    if theory["high"] != theory["low"]:
        ax.axvline(theory["high"], color=EXPECTED, lw=1.6)
    ax.plot([realized], [0], "o", ms=9, color=FLAGGED if flagged else REALIZED, zorder=3)
    span = max(high, realized, theory["high"]) - min(low, realized, theory["low"])
    span = span or max(abs(realized), 1e-6) * 1e-3  # chance cannot move it: a ratio every game shares
    ax.set_xlim(min(low, realized) - 0.15 * span, max(high, realized) + 0.15 * span)
    ax.set_ylim(-1, 1)
    ax.set_yticks([])
    ax.locator_params(axis="x", nbins=4)
    digits = max(0, min(4, 1 - floor(log10(max(span, 1e-9) * 100 / 4))))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{100 * value:.{digits}f}%"))
    ax.spines[["left", "right", "top"]].set_visible(False)
    who = {"vigo": "Vigo", "players": "Players", "operator": "Rake / staked"}[side["side"]]
    ax.set_title(
        f"{who}, {_short(table)}" + ("  FLAGGED" if flagged else ""), color=FLAGGED if flagged else INK
    )


def faces_chart(purposes: Sequence[dict[str, Any]], z: float) -> str | None:
    """Each purpose's share of each face, against 1/6 and the band chance keeps one face's share in."""
    shown = [purpose for purpose in purposes if purpose["rolls"] > 0]
    if not shown:
        return None
    with _figure("faces", 0.4 + 1.7 * len(shown)) as figure:
        axes = figure.subplots(len(shown), 1, squeeze=False, sharex=True)[:, 0]
        for ax, purpose in zip(axes, shown, strict=True):
            rolls = purpose["rolls"]
            shares = [count / rolls for count in purpose["faces"]]
            half = z * sqrt((1 / 6) * (5 / 6) / rolls)
            ax.axhspan(1 / 6 - half, 1 / 6 + half, color=BAND, lw=0)
            ax.axhline(1 / 6, color=EXPECTED, lw=1, ls="--")
            colours = ["#c0392b"] * 3 + ["#2e6fb7"] * 3
            ax.bar(range(1, 7), shares, color=colours, width=0.6)
            ax.set_ylim(
                min(0.1, min(shares) - 0.01, 1 / 6 - half - 0.01),
                max(0.23, max(shares) + 0.01, 1 / 6 + half + 0.01),
            )
            ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{100 * value:.0f}%"))
            ax.locator_params(axis="y", nbins=3)
            name = (
                "All rolls"
                if purpose["purpose"] == "all"
                else purpose["purpose"].replace("_", " ").capitalize()
            )
            ax.set_title(f"{name}: {rolls:,} rolls")
            ax.spines[["right", "top"]].set_visible(False)
        axes[-1].set_xticks(range(1, 7))
        axes[-1].set_xlabel("face (1-3 red, 4-6 blue)")
        return _svg(figure, "faces", "Share of each face per roll purpose, against one in six")


def pairs_chart(residuals: Sequence[Sequence[float]]) -> str:
    """(observed - expected) / sqrt(expected) for each (roll, next roll) pair of faces."""
    with _figure("pairs", 4.4) as figure:
        ax = figure.subplots()
        bound = max(3.0, max(abs(value) for row in residuals for value in row))
        mesh = ax.pcolormesh(
            [[value for value in row] for row in residuals],
            cmap="RdBu_r",
            vmin=-bound,
            vmax=bound,
            edgecolors="white",
            linewidth=1,
        )
        for i, row in enumerate(residuals):
            for j, value in enumerate(row):
                ax.text(j + 0.5, i + 0.5, f"{value:+.1f}", ha="center", va="center", fontsize=10, color=INK)
        ax.set_xticks([k + 0.5 for k in range(6)], [str(k + 1) for k in range(6)])
        ax.set_yticks([k + 0.5 for k in range(6)], [str(k + 1) for k in range(6)])
        ax.set_xlabel("next roll's face")
        ax.set_ylabel("roll's face")
        ax.set_aspect("equal")
        ax.invert_yaxis()  # face 1 on top, as in the table
        bar = figure.colorbar(mesh, ax=ax, shrink=0.8, label="standardized residual")
        if bar.solids is not None:
            bar.solids.set_rasterized(False)  # vector, as the rest: no embedded image
        return _svg(figure, "pairs", "Consecutive rolls: standardized residuals of the 6 by 6 table")


def p_values_chart(tests: Sequence[dict[str, Any]], level: float) -> str | None:
    """Every test run, its p-value on a log scale, beside the flag level and 0.05; each row's name is
    written above its dot, so the names never squeeze the scale on a phone."""
    ran = [test for test in tests if test["p_value"] is not None]
    if not ran:
        return None
    floor_value = 1e-12
    with _figure("p-values", 0.7 + 0.42 * len(ran)) as figure:
        ax = figure.subplots()
        values = [max(test["p_value"], floor_value) for test in ran]
        rows = [-index for index in range(len(ran))]
        ax.scatter(
            values, rows, color=[FLAGGED if test["flagged"] else REALIZED for test in ran], zorder=3, s=28
        )
        left = min(min(values), level) / 10
        for row, test in zip(rows, ran, strict=True):
            ax.text(
                left, row + 0.28, _short_test(test), fontsize=9.5, color=FLAGGED if test["flagged"] else INK
            )
            ax.axhline(row, color=GRID, lw=0.6, zorder=1)
        ax.axvline(level, color=FLAGGED, lw=1.2)
        ax.axvline(0.05, color=MUTED, lw=1, ls=":")
        ax.set_xscale("log")
        ax.set_xlim(left, 1.5)
        ax.set_ylim(rows[-1] - 0.5, 0.75)
        ax.set_yticks([])
        ax.set_xlabel("p-value (log scale)")
        ax.spines[["left", "right", "top"]].set_visible(False)
        return _svg(figure, "p-values", "The p-value of every test run, against the flag level")


def _short(table: dict[str, Any]) -> str:
    rake = "" if not table["rake_bps"] else f", rake {table['rake_bps']} bp"
    return f"Vigo + {table['players']}, stake {table['stake']}{rake}"


def _short_test(test: dict[str, Any]) -> str:
    title: str = test["title"]
    if test["key"].startswith("rtp."):
        return (
            title.split(", raise")[0].replace("RTP of the ", "RTP, ").replace("Rake per unit staked", "Rake")
        )
    return title.replace("Consecutive rolls of a game are independent", "Consecutive rolls independent")
