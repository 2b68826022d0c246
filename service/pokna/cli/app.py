"""The `pokna` command. Each sub-module registers its commands on this one Typer app when it is imported;
`COMMANDS` says which module holds which command, so that only the command being run is imported
(`pokna.cli.group`). A new command module adds its row here."""

from __future__ import annotations

from typing import Annotated

import typer

from pokna import __version__
from pokna.cli.group import LazyCommand, root_group

COMMANDS: dict[str, LazyCommand] = {
    "roll": LazyCommand(
        "pokna.cli.roll", "Compute one roll of pokna-hmac-sha256-v1: f, the face and its colour."
    ),
    "verify": LazyCommand("pokna.cli.verify", "Verify a game proof offline."),
    "odds": LazyCommand(
        "pokna.cli.odds",
        "Exact odds for every seat, assuming unlimited balances and that every player follows one policy.",
    ),
    "serve": LazyCommand("pokna.cli.serve", "Run the Pokna API."),
    "sweep": LazyCommand(
        "pokna.cli.sweep",
        "Time out every passed turn, cancel games never started, purge old idempotency keys and delivered "
        "webhook events, sign moved ledger heads, log finished games.",
    ),
    "db": LazyCommand(
        "pokna.cli.db", "Database schema: upgrade, downgrade, current; stop the embedded PostgreSQL."
    ),
    "ledger": LazyCommand("pokna.cli.ledger", "The double-entry ledger: export, reconcile, checkpoint."),
    "audit": LazyCommand(
        "pokna.cli.audit",
        "Offline audits: ledger exports and audit bundles.",
        also=("pokna.cli.audit_report",),
    ),
    "log": LazyCommand("pokna.cli.public_log", "The public logs of finished games: the sequencer."),
    "tenants": LazyCommand("pokna.cli.tenants", "Tenants (integrating apps) and their API keys."),
    "webhooks": LazyCommand("pokna.cli.webhooks", "Webhooks: the worker that delivers them."),
    "secrets": LazyCommand(
        "pokna.cli.secrets",
        "Production secrets: generate them, and publish a retiring key.",
    ),
}

app = typer.Typer(
    name="pokna",
    help="Pokna: the provably fair Huttese dice game of Vigo's Favor, as a service.",
    cls=root_group(COMMANDS, lambda: _root()),
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)


def _root() -> typer.Typer:
    return app


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"pokna {__version__}")
        raise typer.Exit()


@app.callback()
def pokna(
    version: Annotated[
        bool,
        typer.Option("--version", is_eager=True, callback=_print_version, help="Print the version and exit."),
    ] = False,
) -> None:
    """Pokna: the provably fair Huttese dice game of Vigo's Favor, as a service."""
