"""`pokna odds`: exact winning chances and expected values per seat, under fixed decision policies."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from typing import Annotated

import typer

from pokna.cli.app import app
from pokna_verify.game.errors import InvalidConfig
from pokna_verify.game.json_value import JSONValue
from pokna_verify.game.model import MAX_PLAYERS, MIN_PLAYERS, VIGO_SEAT, GameConfig
from pokna_verify.game.odds import Policy, TableOdds, policies_for, table_odds

_OPTION_OF = {"stake": "--stake", "challenge_raise": "--challenge-raise", "player_count": "--players",
              "rake_bps": "--rake-bps", "rake_cap": "--rake-cap"}  # fmt: skip
_COLUMNS = ("seat", "role", "P(win)", "P(whole pot)", "P(split share)", "EV", "EV (stakes)")


@app.command("odds")
def odds(
    players: Annotated[
        int,
        typer.Option("--players", "-n", help=f"Players besides the Vigo ({MIN_PLAYERS}-{MAX_PLAYERS})."),
    ],
    stake: Annotated[int, typer.Option("--stake", help="Stake in minor units.")] = 1,
    challenge_raise: Annotated[
        int | None,
        typer.Option("--challenge-raise", help="Challenge raise in minor units (default: the stake)."),
    ] = None,
    rake_bps: Annotated[
        int, typer.Option("--rake-bps", help="The house's rake in basis points of each pot (500 is 5%).")
    ] = 0,
    rake_cap: Annotated[
        int | None,
        typer.Option("--rake-cap", help="At most this rake per pot, minor units (default: no cap)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Exact fractions as JSON.")] = False,
) -> None:
    """Exact odds for every seat, assuming unlimited balances and that every player follows one policy.

    With --rake-bps (and --rake-cap), also the operator's exact expected rake per game and per unit staked.
    """
    try:
        config = GameConfig.create(
            stake=stake,
            player_count=players,
            challenge_raise=challenge_raise,
            rake_bps=rake_bps,
            rake_cap=rake_cap,
        )
        policies = policies_for(players)
        tables = [table_odds(config, policy) for policy in policies]
        unrounded = [_unrounded_in_stakes(config, policy) for policy in policies]
    except InvalidConfig as exc:
        raise typer.BadParameter(
            exc.message, param_hint=_OPTION_OF.get(str(exc.details.get("field")))
        ) from exc
    if as_json:
        document = {
            "players": config.player_count,
            "stake": config.stake,
            "challenge_raise": config.challenge_raise,
            "rake_bps": config.rake_bps,
            "rake_cap": config.rake_cap,
            "policies": [
                {
                    **table.to_dict(),
                    "expected_net_stakes_without_rounding": _exact_by_seat(ideal),
                }
                for table, ideal in zip(tables, unrounded, strict=True)
            ],
        }
        typer.echo(json.dumps(document, indent=2))
        return
    typer.echo(
        f"Pokna odds: Vigo + {config.player_count} players, stake {config.stake}, "
        f"challenge raise {config.challenge_raise}{_rake_label(config)}. Exact; balances unlimited; "
        "EV is net of money paid in."
    )
    for table, ideal in zip(tables, unrounded, strict=True):
        typer.echo("")
        typer.echo(f"Every player: {table.policy.label}")
        typer.echo(_render(table))
        if config.rake_bps:
            typer.echo(
                f"  Operator: expected rake {table.expected_rake} = {float(table.expected_rake):.4f} per game; "
                f"{table.rake_per_unit_staked} = {float(table.rake_per_unit_staked):.4%} of every unit staked."
            )
        if any(table.expected_net_in_stakes(seat) != value for seat, value in enumerate(ideal)):
            typer.echo(_rounding_note(config, ideal))


def _exact_by_seat(values: list[Fraction]) -> list[JSONValue]:
    return [{"seat": seat, "exact": str(value), "approx": float(value)} for seat, value in enumerate(values)]


def _rounding_scale(config: GameConfig) -> int:
    """A pot is split among at most every seat: a stake divisible by 1..seats splits with no remainder."""
    return math.lcm(*range(1, config.player_count + 2))


def _unrounded_in_stakes(config: GameConfig, policy: Policy) -> list[Fraction]:
    """Each seat's EV per unit of stake when no split leaves a remainder: the same odds at a stake (and
    raise) scaled so that every split divides evenly. With a rake, whose rounding is part of its terms,
    the odds are given as they are."""
    if config.rake_bps:
        return [table_odds(config, policy).expected_net_in_stakes(seat) for seat in config.seats]
    scale = _rounding_scale(config)
    scaled = GameConfig.create(
        stake=config.stake * scale,
        player_count=config.player_count,
        challenge_raise=config.challenge_raise * scale,
    )
    table = table_odds(scaled, policy)
    return [table.expected_net_in_stakes(seat.seat) for seat in table.seats]


def _rounding_note(config: GameConfig, ideal: list[Fraction]) -> str:
    exact = ", ".join(f"seat {seat} {_signed(value)}" for seat, value in enumerate(ideal))
    return (
        f"  Splits pay whole minor units, the remainder one unit at a time clockwise from the Vigo, so at stake "
        f"{config.stake} the seats' EVs differ by rounding.\n"
        f"  Without rounding (a stake and raise divisible by {_rounding_scale(config)}), EV per unit of stake "
        f"is exactly: {exact}."
    )


def _rake_label(config: GameConfig) -> str:
    if not config.rake_bps:
        return ""
    cap = "" if config.rake_cap is None else f", at most {config.rake_cap} per pot"
    return f", rake {config.rake_bps} bps{cap}"


def _signed(value: Fraction) -> str:
    return f"+{value}" if value > 0 else str(value)


def _render(table: TableOdds) -> str:
    rows = [_COLUMNS]
    for seat in table.seats:
        rows.append(
            (
                str(seat.seat),
                "Vigo" if seat.seat == VIGO_SEAT else f"player {seat.seat}",
                _percent(seat.win),
                _percent(seat.whole_pot),
                _percent(seat.split_share),
                f"{float(seat.expected_net):+.4f}",
                f"{float(table.expected_net_in_stakes(seat.seat)):+.4f}",
            )
        )
    widths = [max(len(row[column]) for row in rows) for column in range(len(_COLUMNS))]
    return "\n".join(
        "  ".join(
            cell.ljust(width) if column < 2 else cell.rjust(width)
            for column, (cell, width) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in rows
    )


def _percent(value: Fraction) -> str:
    return f"{float(value) * 100:.2f}%"
