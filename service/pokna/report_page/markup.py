"""Small pieces of the report's HTML: escaping, numbers as the page writes them, tables that stack into
labelled rows on a phone (pokna.report_page.page's stylesheet), definition lists."""

from __future__ import annotations

from collections.abc import Container, Sequence
from html import escape
from typing import Any


def text(value: object) -> str:
    return escape(str(value), quote=True)


def amount(value: int | None) -> str:
    return "—" if value is None else f"{value:,}"


def percent(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{100 * value:.{digits}f}%"


def p_value(value: float | None) -> str:
    if value is None:
        return "not run"
    if value < 1e-4:
        return f"{value:.1e}"
    return f"{value:.3g}"


def span(low: float, high: float, digits: int = 2) -> str:
    return percent(low, digits) if low == high else f"{percent(low, digits)} to {percent(high, digits)}"


def interval(bounds: dict[str, float] | None, digits: int = 2) -> str:
    return "—" if bounds is None else span(bounds["low"], bounds["high"], digits)


def verdict(test: dict[str, Any]) -> str:
    if test["p_value"] is None:
        return f'<span class="muted">not run: {text(test["not_run"])}</span>'
    if test["flagged"]:
        return '<strong class="flag">FLAGGED</strong>'
    return '<span class="ok">within</span>'


def stacked_table(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    caption: str | None = None,
    text_columns: Container[int] = (),
    number_columns: Container[int] = (),
) -> str:
    """A table whose rows become labelled blocks on a narrow screen (each cell names its column; the first
    heads its block). `text_columns`: prose, set under its label there rather than beside it;
    `number_columns`: figures, never broken across lines on a wide screen."""

    def kind(index: int) -> str:
        if index in text_columns:
            return ' class="text"'
        return ' class="num"' if index in number_columns else ""

    head = "".join(
        f'<th scope="col"{kind(index)}>{text(header)}</th>' for index, header in enumerate(headers)
    )
    body = "".join(
        "<tr>"
        + "".join(
            f'<td data-label="{text(header)}"{kind(index)}>{cell}</td>'
            for index, (header, cell) in enumerate(zip(headers, row, strict=True))
        )
        + "</tr>"
        for row in rows
    )
    titled = f"<caption>{text(caption)}</caption>" if caption else ""
    return f'<table class="stack">{titled}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def grid_table(
    corner: str, columns: Sequence[str], rows: Sequence[tuple[str, Sequence[str]]], *, caption: str
) -> str:
    """A small table with a header row and a header column, scrolled sideways if a phone is too narrow."""
    head = f'<th scope="col">{text(corner)}</th>' + "".join(
        f'<th scope="col">{text(c)}</th>' for c in columns
    )
    body = "".join(
        f'<tr><th scope="row">{text(name)}</th>' + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>"
        for name, cells in rows
    )
    return (
        f'<div class="scroll"><table class="grid"><caption>{text(caption)}</caption>'
        f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"
    )


def facts(pairs: Sequence[tuple[str, str]]) -> str:
    """A definition list of (term, value-as-HTML)."""
    return (
        '<dl class="facts">'
        + "".join(f"<dt>{text(term)}</dt><dd>{value}</dd>" for term, value in pairs)
        + "</dl>"
    )


def figure(svg: str | None, caption: str) -> str:
    if svg is None:
        return ""
    return f"<figure>{svg}<figcaption>{text(caption)}</figcaption></figure>"
