"""`pokna odds`: exact winning chances and expected values per seat, under fixed decision policies."""

from __future__ import annotations

import json
from fractions import Fraction
from typing import Annotated

import typer

from pokna.cli.app import app
from pokna.game.errors import InvalidConfig
from pokna.game.model import MAX_PLAYERS, MIN_PLAYERS, VIGO_SEAT, GameConfig
from pokna.game.odds import TableOdds, policies_for, table_odds

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
    as_json: Annotated[bool, typer.Option("--json", help="Exact fractions as JSON.")] = False,
) -> None:
    """Exact odds for every seat, assuming unlimited balances and that every player follows one policy."""
    try:
        config = GameConfig.create(stake=stake, player_count=players, challenge_raise=challenge_raise)
    except InvalidConfig as exc:
        raise typer.BadParameter(exc.message) from exc
    tables = [table_odds(config, policy) for policy in policies_for(players)]
    if as_json:
        document = {
            "players": config.player_count,
            "stake": config.stake,
            "challenge_raise": config.challenge_raise,
            "policies": [table.to_dict() for table in tables],
        }
        typer.echo(json.dumps(document, indent=2))
        return
    typer.echo(
        f"Pokna odds: Vigo + {config.player_count} players, stake {config.stake}, "
        f"challenge raise {config.challenge_raise}. Exact; balances unlimited; EV is net of money paid in."
    )
    for table in tables:
        typer.echo("")
        typer.echo(f"Every player: {table.policy.label}")
        typer.echo(_render(table))


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
