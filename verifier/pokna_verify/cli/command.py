"""The `pokna-verify` command line, read by argparse: its commands, `proof`, `audit` and `log watch`, their options in
the words the service's `pokna verify` and `pokna audit verify` show (pokna_verify.cli.usage), and the run
of the one that was asked for.

One command for exports and bundles, as `pokna audit verify`: the file says what it is in its first record
(a bundle opens with its signed header), so the auditor need not, and cannot pick the wrong one."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from pokna_verify.cli import usage
from pokna_verify.cli.exit_codes import EXIT_UNUSABLE

PROG = "pokna-verify"
KEY_TEXT_OPTION = "--public-key"


def _key_text_attached(argv: list[str]) -> list[str]:
    """`--public-key KEY` with KEY's own text: base64url begins with `-` for one key in 64, which argparse
    would read as an option (the service's `pokna audit verify`, on click, takes it as it is). Written
    `--public-key=KEY`, it is the option's value whatever its first character."""
    attached: list[str] = []
    values = iter(argv)
    for word in values:
        if word == KEY_TEXT_OPTION:
            following = next(values, None)
            attached.append(word if following is None else f"{word}={following}")
        else:
            attached.append(word)
    return attached


DESCRIPTION = "Check a Pokna game's proof, a ledger export or an audit bundle offline, without running Pokna."


def run(argv: Sequence[str] | None = None) -> int:
    parser = command_line()
    try:
        arguments = parser.parse_args(_key_text_attached(sys.argv[1:] if argv is None else list(argv)))
    except SystemExit as stop:  # --help (0) or a usage mistake (2, said on stderr by argparse)
        return stop.code if isinstance(stop.code, int) else EXIT_UNUSABLE
    # Each command's dests are its run function's parameter names (--beacon-chain's is beacon_chains).
    options = vars(arguments)
    command, log_command = options.pop("command"), options.pop("log_command", None)
    if command == "proof":
        from pokna_verify.cli.proof_run import run_proof

        return run_proof(**options)
    if command == "log" and log_command == "watch":
        from pokna_verify.cli.log_watch import run_log_watch

        return run_log_watch(**options)
    if command == "audit":
        from pokna_verify.cli.audit_run import run_audit

        return run_audit(**options)
    parser.print_help(sys.stderr)
    return EXIT_UNUSABLE


def command_line() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description=DESCRIPTION)
    parser.add_argument("--version", action=_PrintVersion, help="Print the version and exit.")
    commands = parser.add_subparsers(dest="command", metavar="{proof,audit,log}")

    proof = commands.add_parser(
        "proof",
        help=usage.PROOF_SUMMARY,
        description=f"{usage.PROOF_SUMMARY} {usage.PROOF_EXIT_CODES}",
    )
    proof.add_argument("source", metavar="SOURCE", help=usage.PROOF_SOURCE)
    proof.add_argument("--server", metavar="URL", help=usage.PROOF_SERVER)
    proof.add_argument("--public-key", metavar="FILE", type=Path, help=usage.PROOF_PUBLIC_KEY)
    proof.add_argument("--keys", metavar="FILE|URL", help=usage.PROOF_KEYS)
    proof.add_argument("--receipt", metavar="FILE", type=Path, help=usage.PROOF_RECEIPT)
    proof.add_argument("--log", metavar="URL", help=usage.PROOF_LOG)
    proof.add_argument("--state", metavar="FILE", type=Path, help=usage.PROOF_STATE)
    _beacon_chain_and_json(proof)

    audit = commands.add_parser(
        "audit",
        help=usage.AUDIT_SUMMARY,
        description=f"{usage.AUDIT_SUMMARY} {usage.AUDIT_EXIT_CODES}",
    )
    audit.add_argument("source", metavar=usage.AUDIT_SOURCE_METAVAR, type=Path, help=usage.AUDIT_SOURCE)
    audit.add_argument("--keys", metavar="FILE|URL", help=usage.AUDIT_KEYS)
    audit.add_argument("--checkpoint", metavar="FILE", type=Path, help=usage.AUDIT_CHECKPOINT)
    audit.add_argument("--public-key", metavar="FILE|KEY", help=usage.AUDIT_PUBLIC_KEY)
    audit.add_argument(
        "--previous-checkpoint", metavar="FILE", type=Path, help=usage.AUDIT_PREVIOUS_CHECKPOINT
    )
    audit.add_argument("--processes", metavar="N", type=_at_least_one, help=usage.PROCESSES)
    audit.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None, help=usage.PROGRESS)
    _beacon_chain_and_json(audit)

    log = commands.add_parser("log", help=usage.LOG_SUMMARY, description=usage.LOG_SUMMARY)
    log_commands = log.add_subparsers(dest="log_command", metavar="{watch}")
    watch = log_commands.add_parser(
        "watch",
        help=usage.LOG_WATCH_SUMMARY,
        description=f"{usage.LOG_WATCH_SUMMARY} {usage.LOG_WATCH_EXIT_CODES}",
    )
    watch.add_argument("url", metavar="URL", help=usage.LOG_URL)
    watch.add_argument("--state", metavar="FILE", type=Path, required=True, help=usage.LOG_STATE)
    watch.add_argument("--keys", metavar="FILE|URL", help=usage.LOG_KEYS)
    watch.add_argument("--json", dest="as_json", action="store_true", help=usage.JSON)
    return parser


def _beacon_chain_and_json(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--beacon-chain",
        dest="beacon_chains",
        metavar="FILE",
        type=Path,
        action="append",
        default=[],
        help=usage.BEACON_CHAIN,
    )
    command.add_argument("--json", dest="as_json", action="store_true", help=usage.JSON)


def _at_least_one(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"{number} is not 1 or more")
    return number


class _PrintVersion(argparse.Action):
    """argparse's own "version" action wants the text up front; the installed version is read only when asked."""

    def __init__(self, option_strings: Sequence[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            installed = version("pokna-verify")
        except PackageNotFoundError:  # run from a source tree that was never installed
            installed = "(not installed)"
        print(f"{PROG} {installed}")
        parser.exit()
