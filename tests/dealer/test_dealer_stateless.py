"""Two `pokna serve` processes on one PostgreSQL: a game played across both is one game.

Which secrets? Each process is configured with the same POKNA_SIGNING_KEY and POKNA_SEED_ENCRYPTION_KEY
and its own data directory, under POKNA_ENV=production. That is what stateless means: replicas share the
database and their configuration, never a filesystem. A shared data directory would also "work" in
development, but only because whichever process first needs a key writes it there for the other to find
(a check-then-create with no lock between processes), and production refuses generated keys anyway.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest
from alembic import command
from sqlalchemy import Engine, text

from pokna.db import migrate
from pokna.db.engine import make_engine
from pokna_verify.crypto.signing import generate_signing_key, private_key_to_pem
from pokna_verify.fairness.seed_vault import generate_vault_key
from support.game_play import CONFLICT_CODES, Api, Response, check_finished_game, obliging, play, verify
from support.servers import running_server
from support.sessions import make_sessionmaker


@pytest.fixture
def shared_env(empty_database_url: str) -> dict[str, str]:
    """What both replicas are configured with: one database, one signing key, one seed vault key."""
    return {
        "POKNA_ENV": "production",
        "POKNA_DATABASE_URL": empty_database_url,
        "POKNA_SIGNING_KEY": private_key_to_pem(generate_signing_key()).decode(),
        "POKNA_SEED_ENCRYPTION_KEY": generate_vault_key().hex(),
        "POKNA_LOG_LEVEL": "WARNING",
    }


@pytest.fixture
def two_servers(shared_env: dict[str, str], tmp_path: Path) -> Iterator[list[str]]:
    # One after the other: the first migrates the empty database, the second finds it at head.
    # (Both starting at once on an empty database is the migration-lock test below.)
    with ExitStack() as stack:
        bases = [stack.enter_context(running_server(shared_env, tmp_path / name / "data")) for name in "ab"]
        yield bases


def create_tenant_with_cli(env: dict[str, str], tmp_path: Path) -> str:
    pokna = Path(sys.executable).with_name("pokna")
    result = subprocess.run(
        [str(pokna), "tenants", "create", "Chalmun's Cantina", "--json"],
        env={**os.environ, **env, "POKNA_DATA_DIR": str(tmp_path / "cli")},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    api_key: str = json.loads(result.stdout)["api_key"]
    return api_key


def test_a_game_played_alternately_on_two_servers(
    two_servers: list[str], shared_env: dict[str, str], tmp_path: Path
) -> None:
    api_key = create_tenant_with_cli(shared_env, tmp_path)
    with (
        httpx.Client(base_url=two_servers[0], timeout=30) as first,
        httpx.Client(base_url=two_servers[1], timeout=30) as second,
    ):
        apis = [Api(first, api_key), Api(second, api_key)]
        wallets = [apis[index % 2].wallet(100) for index in range(5)]
        game = apis[1].create_game(wallets[0], wallets[1:], stake=5)
        seeded = apis[0].act(
            game["id"], {"type": "set_client_seed", "account_id": wallets[1], "client_seed": "r2-d2"}
        )
        assert seeded.status_code == 200, seeded.text
        game = play(apis, seeded.json(), obliging)

        assert game["status"] == "settled"
        views = [api.game(game["id"]) for api in apis]
        assert views[0] == views[1]
        assert views[0]["pot"] == 0
        balances = [[api.balance(wallet) for wallet in wallets] for api in apis]
        assert balances[0] == balances[1]
        assert sum(balances[0]) == 500
        assert {seat["account_id"]: seat["paid_out"] - seat["paid_in"] for seat in game["seats"]} == {
            wallet: balance - 100 for wallet, balance in zip(wallets, balances[0], strict=True)
        }
        assert apis[0].trial_balance_total() == apis[1].trial_balance_total() == 0

        rings = [api.key_ring() for api in apis]
        assert rings[0] == rings[1]
        proofs = [api.proof(game["id"]) for api in apis]
        assert proofs[0] == proofs[1]
        for ring in rings:
            report = verify(proofs[0], ring, receipt=game["fairness"]["commitment"])
            assert report.valid, report.to_json()
        engine = make_engine(shared_env["POKNA_DATABASE_URL"])
        try:
            check_finished_game(apis[1], make_sessionmaker(engine), game["id"], rings[0])
        finally:
            engine.dispose()


def test_the_same_turn_sent_to_both_servers_at_once_applies_once(
    two_servers: list[str], shared_env: dict[str, str], tmp_path: Path
) -> None:
    api_key = create_tenant_with_cli(shared_env, tmp_path)
    clients = [httpx.Client(base_url=two_servers[index % 2], timeout=30) for index in range(8)]
    try:
        apis = [Api(client, api_key) for client in clients]
        wallets = [apis[0].wallet(100) for _ in range(4)]
        game = apis[0].create_game(wallets[0], wallets[1:])
        for _ in range(100):
            if game["status"] == "settled":
                break
            responses = _all_at_once(apis, game["id"], obliging(game))
            assert Counter(response.status_code for response in responses) == {200: 1, 409: 7}
            assert {r.json()["code"] for r in responses if r.status_code == 409} <= CONFLICT_CODES
            game = next(response.json() for response in responses if response.status_code == 200)
        assert game["status"] == "settled"
        engine = make_engine(shared_env["POKNA_DATABASE_URL"])
        try:
            check_finished_game(apis[1], make_sessionmaker(engine), game["id"], apis[0].key_ring())
        finally:
            engine.dispose()
    finally:
        for client in clients:
            client.close()


def _all_at_once(apis: list[Api], game_id: str, body: dict[str, Any]) -> list[Response]:
    barrier = threading.Barrier(len(apis))

    def send(api: Api) -> Response:
        barrier.wait(timeout=30)
        return api.act(game_id, body)

    with ThreadPoolExecutor(max_workers=len(apis)) as pool:
        futures = [pool.submit(send, api) for api in apis]
        return [future.result(timeout=60) for future in futures]


def test_two_replicas_starting_on_an_empty_database_at_once_both_migrate(empty_database_url: str) -> None:
    """`pokna serve` migrates before serving, so replicas rolled out together migrate together.

    Made deterministic: the first migration is held uncommitted until the second is seen waiting on it.
    """
    engine = make_engine(empty_database_url)
    second_error: list[BaseException] = []

    def second_replica() -> None:
        try:
            migrate.upgrade(empty_database_url)  # exactly what `pokna serve` does first
        except BaseException as error:
            second_error.append(error)

    try:
        with engine.connect() as first:
            transaction = first.begin()
            config = migrate.alembic_config(empty_database_url)
            config.attributes["connection"] = first
            command.upgrade(config, "head")
            replica = threading.Thread(target=second_replica, daemon=True)
            replica.start()
            _wait_for_a_blocked_backend(engine, timeout=30)
            transaction.commit()
            replica.join(timeout=60)
        assert not replica.is_alive()
        assert second_error == []
        assert migrate.current_revision(engine) == migrate.head_revision()
    finally:
        engine.dispose()


def _wait_for_a_blocked_backend(engine: Engine, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with engine.connect() as probe:
            waiting = probe.scalar(
                text(
                    "SELECT count(*) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND wait_event_type = 'Lock'"
                )
            )
        if waiting:
            return
        time.sleep(0.05)
    raise AssertionError("the second migration never waited on the first")
