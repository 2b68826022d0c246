"""`pokna` command line: serve, db, tenants, roll, verify, odds, ledger, audit."""

from __future__ import annotations

from pokna.cli import db, fairness, ledger, odds, secrets, serve, sweep, tenants  # noqa: F401  (each registers its commands)
from pokna.cli.app import app


def main() -> None:
    app()
