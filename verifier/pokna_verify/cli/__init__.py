"""`pokna-verify`: check a game's proof, a ledger export or an audit bundle offline, without running Pokna
(`pokna-verify proof|audit|log watch`; each command's --help lists its options, cli.command declares them).

The service's `pokna verify` and `pokna audit verify` are these two commands (the same functions:
`proof_run.run_proof`, `audit_run.run_audit`), with the same options, output, --json and exit codes. The
standard library's argparse reads the command line, so the verifier installs nothing but what its checks
need. The checkers are imported once a command runs, not for --help.
"""

from __future__ import annotations

from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """The exit code: the console script exits with it (`sys.exit(main())`), a test reads it."""
    from pokna_verify.cli.command import run

    return run(argv)
