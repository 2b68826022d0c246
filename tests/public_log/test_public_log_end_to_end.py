"""The whole road over real HTTP: a real `pokna serve`, games played to their end, `pokna log sequence
--once` as an operator runs it, then the player's and the witness's commands against the server's
addresses: `pokna-verify log watch` keeps and extends its checkpoint, and `pokna-verify proof --log` finds
the game in the log, as game #N of its origin's public log."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import httpx
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from pokna.db.models.ledger import Account
from pokna_verify.cli import main
from support.game_play import Api, new_tenant_key, obliging, play
from support.servers import serving

ORIGIN = "e2e.example/games"


def verifier(*argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue() + err.getvalue()


def test_a_played_game_is_found_in_the_log_by_the_players_and_the_witnesss_commands(
    database_url: str, sessions: sessionmaker[Session], tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    env = {"POKNA_DATABASE_URL": database_url, "POKNA_ENV": "test", "POKNA_PUBLIC_LOG_ORIGIN": ORIGIN}
    sequencer = [str(Path(sys.executable).with_name("pokna")), "log", "sequence", "--once", "--json"]
    run_env = {**os.environ, **env, "POKNA_DATA_DIR": str(data_dir)}
    state = tmp_path / "witness.json"
    with serving(env, data_dir) as server, httpx.Client(base_url=server.base, timeout=30) as http:
        api = Api(http, new_tenant_key(sessions))
        wallets = [api.wallet(100) for _ in range(3)]
        with sessions() as session:
            tenant_id = session.scalar(select(Account.tenant_id).where(Account.id == wallets[0]))
        log_url = f"{server.base}/v1/logs/{tenant_id}"

        def finish_game() -> dict[str, object]:
            return play([api], api.create_game(wallets[0], wallets[1:], stake=2), obliging)

        first = finish_game()
        done = subprocess.run(
            sequencer, env=run_env, capture_output=True, text=True, timeout=120, check=False
        )
        assert (done.returncode, json.loads(done.stdout)) == (0, {"games_logged": 1}), done.stderr
        code, said = verifier("log", "watch", log_url, "--state", str(state))
        assert code == 0, said
        assert said.startswith(f"FIRST: first checkpoint of {ORIGIN}/{tenant_id}: 1 games")

        second = finish_game()
        link = f"{server.base}/verify?proof={api.game(str(second['id']))['fairness']['public_url'].rsplit('/', 1)[-1]}"
        code, said = verifier("proof", link, "--log", log_url)  # ended, not logged yet
        assert code == 0, said
        assert "public log: NOT LOGGED YET: game" in said
        subprocess.run(sequencer, env=run_env, capture_output=True, timeout=120, check=True)
        code, said = verifier("proof", link, "--log", log_url, "--state", str(state))
        assert code == 0, said
        assert f"public log: INCLUDED: game #2 of {ORIGIN}/{tenant_id}'s public log" in said
        code, said = verifier("proof", link)  # no --log: the link carries its place in the log
        assert code == 0, said
        assert f"public log: INCLUDED: game #2 of {ORIGIN}/{tenant_id}'s public log" in said
        code, said = verifier("log", "watch", log_url, "--state", str(state))
        assert code == 0, said
        assert said.startswith("SAME:"), said  # the proof's check already kept the checkpoint of 2
        assert first["status"] in ("settled", "cancelled")
