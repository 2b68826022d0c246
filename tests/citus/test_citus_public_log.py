"""On Citus a tenant's public log lives on its tenant's shard: the sequencer's pass (lock, read the waiting
games, append, mark, sign) and every public read run on one shard and commit in one phase, held on the live
cluster with every fan-out refused (as tests/citus/test_citus_one_shard.py holds the hot paths)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text

from pokna.app import create_app
from pokna.db.engine import make_engine
from pokna.db.types import utc_now
from pokna.public_log.sequencer import LogSigner, append_finished_games
from pokna.runtime import Runtime
from pokna.settings import Environment, Settings
from support.game_play import Api, obliging, play
from support.tenant_api import api_key_on

pytestmark = pytest.mark.xdist_group("citus")


async def _append(runtime: Runtime, tenant_id: str, signer: LogSigner) -> int | None:
    async with runtime.aio.connection() as connection:
        return await append_finished_games(connection, tenant_id, signer, utc_now())


@pytest.fixture
def single_shard_url(citus_database_url: str) -> str:
    admin = create_engine(citus_database_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        name = connection.scalar(text("SELECT current_database()"))
        connection.execute(text(f'ALTER DATABASE "{name}" SET citus.multi_task_query_log_level = error'))
        connection.execute(text(f'ALTER DATABASE "{name}" SET plan_cache_mode = force_custom_plan'))
    admin.dispose()
    return citus_database_url


def test_the_sequencer_and_the_public_reads_run_on_one_shard_in_one_phase(
    single_shard_url: str, tmp_path: Path
) -> None:
    api_key = api_key_on(single_shard_url, "Mos Espa")
    settings = Settings(env=Environment.TEST, data_dir=tmp_path / "data", database_url=single_shard_url)
    engine = make_engine(single_shard_url)
    admin = create_engine(single_shard_url, isolation_level="AUTOCOMMIT")
    runtime = Runtime.from_settings(settings)
    signer = LogSigner("citus.test/games", runtime.keys.signing_key)

    def two_phase_commits() -> int:
        with admin.connect() as connection:
            return int(connection.scalar(text("SELECT count(*) FROM pg_dist_transaction")) or 0)

    try:
        with admin.connect() as connection:
            tenant_id = connection.scalar(text("SELECT id FROM tenant WHERE name = 'Mos Espa'"))
        assert isinstance(tenant_id, str)
        with TestClient(create_app(settings, runtime), raise_server_exceptions=False) as client:
            api = Api(client, api_key)
            wallets = [api.wallet(100) for _ in range(3)]
            games = []
            for _ in range(2):
                game = api.ok(
                    api.post(
                        "/v1/games",
                        {"vigo_account_id": wallets[0], "player_account_ids": wallets[1:], "stake": 5},
                    ),
                    201,
                )
                games.append(play([api], game, obliging)["id"])
                before = two_phase_commits()
                assert asyncio.run(_append(runtime, tenant_id, signer)) == 1
                assert two_phase_commits() == before, "the sequencer's pass committed in two phases"
            base = f"/v1/logs/{tenant_id}"
            link = api.ok(api.get(f"/v1/games/{games[0]}"))["fairness"]["public_url"]
            for path in (
                link,
                f"{base}/checkpoint",
                f"{base}/checkpoints/1",
                f"{base}/games/{games[0]}/inclusion?tree_size=2",
                f"{base}/consistency?first=1&second=2",
            ):
                answer = client.get(path)
                assert answer.status_code == 200, (path, answer.text)
    finally:
        admin.dispose()
        engine.dispose()
