"""The `pokna` command. Each sub-module registers its commands on this one Typer app."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="pokna",
    help="Pokna: the provably fair Huttese dice game of Vigo's Favor, as a service.",
    no_args_is_help=True,
    add_completion=False,
)
