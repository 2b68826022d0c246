"""The `pokna` command group: sub-commands imported only when run (or their help shown), plain help, and
one error style.

- **Lazy**: `pokna.cli.app.COMMANDS` (a table of `LazyCommand`) names each sub-command's module and summary. `pokna --help` lists
  the summaries without importing anything; `pokna roll` imports `pokna.cli.roll` alone, so it never
  pays for SQLAlchemy, Alembic or FastAPI. A module registers its commands on the one Typer app as it is
  imported; the group then builds the Click command for it.
- **Help**: plain Click layout (no rich boxes), option values named like Click's (`--tenant TEXT`), flags
  with no type label, arguments by their metavar (`PROOF.json`, `[REVISION]`).
- **Parsing**: text, numbers (whole or not) and paths are read here, not through a pydantic TypeAdapter as Typer
  does (importing pydantic alone costs `pokna roll` a tenth of a second); other types go to Typer.
- **Errors**: everything a command raises that `pokna.cli.errors.describe` knows becomes one line,
  `error: ...`, on stderr; Click's usage errors become one line too, exit 2; Ctrl-C is `error: interrupted`,
  exit 130, with no traceback.

Which of this is a supported hook, and which is not (Typer 0.29, issue 35 asked):
- The lazy part is Click's documented lazy group ("Lazily Loading Subcommands": a `Group` whose
  `list_commands` and `get_command` import on demand, here with `format_commands` listing the table's
  summaries), on `TyperGroup`, which Typer documents as the class to pass as `cls`. Only `resolve_command`'s
  "Did you mean" calls a private method, Typer's `_click_resolve_command`.
- The help labels and the parsing have no supported hook. Typer 0.29 parses every parameter, `int` and `str`
  too, through pydantic (`typer._coercion`), labels values `<int range>` and `<str>`, and words a bad value
  in pydantic's terms ("Input should be a valid integer, unable to parse string as an integer"); it offers
  no setting for any of it. `_PlainValue`, `_Argument` and `_Option` therefore override private parts of
  Typer (`RuntimeParam`, `_TyperParameter.get_runtime_param`, `display_type_rich`, `_usage_display_name`),
  and tests/cli (`test_cli_group.py`, `test_cli_mistakes.py`) hold the help and the wording, so a Typer
  upgrade that moves them fails there. The way out is to declare the commands with Click itself (then
  all of this is Click's public API), which rewrites every command module: not done in issue 35.
"""

from __future__ import annotations

import importlib
import math
import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from difflib import get_close_matches
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

import typer
import typer.main
from typer import _click
from typer._coercion import RuntimeParam
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption, _TyperParameter

from pokna.cli.errors import (
    EXIT_FAILURE,
    EXIT_INTERRUPTED,
    TRACEBACK_ENV,
    describe,
    is_database_error,
    unexpected,
)

# Typer's type labels (`<int range>`) as Click names a value in help (`INTEGER`).
_TYPE_NAMES = {
    "str": "TEXT",
    "int": "INTEGER",
    "int range": "INTEGER",
    "float": "NUMBER",
    "float range": "NUMBER",
    "path": "PATH",
    "file": "FILE",
    "directory": "DIRECTORY",
}
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


@dataclass(frozen=True)
class _PlainValue(RuntimeParam):
    """str, bool, int and float (with their min/max; a float is finite) and Path, read without pydantic,
    with Click's wording on a bad value."""

    def _coerce_value(self, value: Any, param: _TyperParameter, ctx: _click.Context) -> Any:
        if self.annotation is str:
            return str(value)
        if self.annotation is Path:
            return Path(value)
        if self.annotation is bool:
            if isinstance(value, bool):
                return value
            if str(value).lower() in _TRUE | _FALSE:
                return str(value).lower() in _TRUE
            raise typer.BadParameter(f"{value!r} is not true or false.", ctx=ctx, param=param)
        number: int | float
        try:
            number = float(value) if self.annotation is float else int(value)
        except (TypeError, ValueError):
            kind = "a number" if self.annotation is float else "a whole number"
            raise typer.BadParameter(f"{value!r} is not {kind}.", ctx=ctx, param=param) from None
        if not math.isfinite(number):
            raise typer.BadParameter(f"{value!r} is not a number.", ctx=ctx, param=param)
        low, high = self.parameter_info.min, self.parameter_info.max
        if low is not None and high is not None and not low <= number <= high:
            raise typer.BadParameter(f"{number} is not between {low} and {high}.", ctx=ctx, param=param)
        if low is not None and number < low:
            raise typer.BadParameter(f"{number} is not at least {low}.", ctx=ctx, param=param)
        if high is not None and number > high:
            raise typer.BadParameter(f"{number} is not at most {high}.", ctx=ctx, param=param)
        return number


def _plain(param: _TyperParameter) -> bool:
    info = param.type_descriptor.parameter_info
    kind = param.type_descriptor.annotation
    if param.type_descriptor.file_annotation is not None or param.multiple or param.nargs != 1:
        return False
    if kind is str or kind is bool:
        return True
    if kind is int or kind is float:
        return not getattr(info, "clamp", False)
    return kind is Path and not getattr(info, "exists", False) and not getattr(info, "resolve_path", False)


class _PlainParameter(_TyperParameter):
    def get_runtime_param(self) -> RuntimeParam:
        if self._runtime_param is None and _plain(self):
            descriptor = self.type_descriptor
            self._runtime_param = _PlainValue(descriptor.parameter_info, descriptor.annotation)
        return super().get_runtime_param()


class _Argument(_PlainParameter, TyperArgument):
    """`PROOF.json` in the usage line and in the help, never `{PROOF.json}` or `PROOF.json <path>`."""

    @property
    def display_name_raw(self) -> str:
        return self.metavar or (self.name or "").upper()

    def _usage_display_name(self) -> str:
        name = self.display_name_raw if self.required else f"[{self.display_name_raw}]"
        return name + ("..." if self.nargs != 1 else "")

    def _rich_display_name(self) -> str:
        return self.display_name_raw

    def display_type_rich(self, ctx: _click.Context) -> str | None:
        return None


class _Option(_PlainParameter, TyperOption):
    """`--tenant TEXT`, `--nonce INTEGER`, and a flag with no label at all."""

    def display_type_rich(self, ctx: _click.Context) -> str | None:
        if self.metavar is not None:
            return self.metavar
        if self.is_flag:
            return None
        label = self.display_type(ctx).strip("<>")
        return _TYPE_NAMES.get(label, label.upper().replace("|", " | "))


def _polish_param(param: _click.Parameter) -> None:
    if type(param) is TyperArgument:
        param.__class__ = _Argument
    elif type(param) is TyperOption:
        param.__class__ = _Option


class _PlainHelpOption(_click.Command):
    """`--help` is made per context: it too is read without pydantic."""

    def get_help_option(self, ctx: _click.Context) -> TyperOption | None:
        option = super().get_help_option(ctx)
        if option is not None:
            _polish_param(option)
        return option


class _Command(_PlainHelpOption, TyperCommand):
    pass


class _Group(_PlainHelpOption, TyperGroup):
    pass


def polish(command: _click.Command) -> _click.Command:
    """Give `command` (and everything under it) the help layout and the parsing above."""
    for param in command.params:
        _polish_param(param)
    if type(command) is TyperCommand:
        command.__class__ = _Command
    elif type(command) is TyperGroup:
        command.__class__ = _Group
    for sub in getattr(command, "commands", {}).values():
        polish(sub)
    return command


def _one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


class LazyCommand(NamedTuple):
    module: str  # registers the command on the root's Typer app when imported
    summary: str  # its short help, shown by `pokna --help` without importing the module
    also: tuple[str, ...] = ()  # modules that add the group's other sub-commands


class _Interrupted(Exception):
    """Ctrl-C, carried past Typer, which turns a KeyboardInterrupt into a silent exit 130."""


class PoknaGroup(_PlainHelpOption, TyperGroup):
    """The root of `pokna`: its commands come from a table of `LazyCommand`s, each imported on first use
    and built from the root's Typer app (`root_group` binds both)."""

    table: ClassVar[Mapping[str, LazyCommand]] = {}
    typer_app: ClassVar[Callable[[], typer.Typer]]

    def invoke(self, ctx: _click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            raise _Interrupted from None

    def list_commands(self, ctx: _click.Context) -> list[str]:
        return list(self.table)

    def get_command(self, ctx: _click.Context, cmd_name: str) -> _click.Command | None:
        lazy = self.table.get(cmd_name)
        if cmd_name not in self.commands and lazy is not None:
            for module in (lazy.module, *lazy.also):
                importlib.import_module(module)
            built = typer.main.get_group(type(self).typer_app()).commands.get(cmd_name)
            if built is not None:
                self.commands[cmd_name] = polish(built)
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: _click.Context, formatter: _click.HelpFormatter) -> None:
        """The summaries from the table: listing the commands imports none of them."""
        with formatter.section("Commands"):
            formatter.write_dl([(name, command.summary) for name, command in self.table.items()])

    def resolve_command(
        self, ctx: _click.Context, args: list[str]
    ) -> tuple[str | None, _click.Command | None, list[str]]:
        try:
            return self._click_resolve_command(ctx, args)
        except _click.exceptions.UsageError as error:
            matches = get_close_matches(args[0], self.list_commands(ctx)) if args else []
            if matches:
                error.message = f"{error.message.rstrip('.')}. Did you mean {', '.join(map(repr, matches))}?"
            raise

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        polish(self)
        try:
            code = super().main(
                args=args,
                prog_name=prog_name or "pokna",
                complete_var=complete_var,
                standalone_mode=False,
                windows_expand_args=windows_expand_args,
                **extra,
            )
        except _click.exceptions.NoArgsIsHelpError as error:
            error.show()
            code = error.exit_code
        except _click.exceptions.UsageError as error:
            code = _report(_usage_line(error), error.exit_code)
        except _click.exceptions.ClickException as error:
            code = _report(_one_line(error.format_message()), error.exit_code)
        except typer.Abort:
            code = _report("aborted", EXIT_FAILURE)
        except _Interrupted:
            if sys.stderr.isatty():
                _click.echo(err=True)  # off the line of the terminal's ^C
            code = _report("interrupted", EXIT_INTERRUPTED)
        except Exception as error:
            described = describe(error)
            if is_database_error(error):
                from pokna.cli.database_errors import describe_database_error

                described = describe_database_error(error), EXIT_FAILURE
            if described is None:
                if os.environ.get(TRACEBACK_ENV) == "1":
                    raise
                described = unexpected(error), EXIT_FAILURE
            code = _report(*described)
        _leave_started_clusters(succeeded=code in (None, 0))
        if not standalone_mode:
            return code
        sys.exit(code if isinstance(code, int) else 0)


def root_group(table: Mapping[str, LazyCommand], typer_app: Callable[[], typer.Typer]) -> type[PoknaGroup]:
    """The root group's class for `typer.Typer(cls=...)`: the command table, and the Typer app the commands
    register on (a function, as the app is made with this class)."""
    return type("PoknaGroup", (PoknaGroup,), {"table": table, "typer_app": staticmethod(typer_app)})


def _leave_started_clusters(succeeded: bool) -> None:
    """A command that started the embedded PostgreSQL for itself said so or stopped it (only a command that
    reached a database imported the module that knows)."""
    database = sys.modules.get("pokna.cli.database_url")
    if database is not None:
        database.leave_started_clusters(succeeded)


def _usage_line(error: _click.exceptions.UsageError) -> str:
    where = f"`{error.ctx.command_path} --help`" if error.ctx is not None else "`pokna --help`"
    return f"{_one_line(error.format_message()).rstrip('.')} (see {where})"


def _report(message: str, code: int) -> int:
    _click.echo(f"error: {message}", err=True)
    return code
