"""`pokna` command line: serve, db, tenants, roll, verify, odds, ledger, audit.

Sub-commands are imported when they run (`pokna.cli.group`), so this package imports none of them."""

from __future__ import annotations

from pokna.cli.app import app


def main() -> None:
    app()
