"""A worker's outage (docs/scaling.md, "What changes for operations"): its tenants get 503
`database_unavailable` with `Retry-After`, never a 500; the other worker's tenants go on (but for the game
creations whose new public link would go to the worker that is down: 503 too); once the worker is back,
every request retried under its key posts once and nothing acknowledged is lost. Run with the API
on the coordinator and with the API on the workers ("Serving through the workers"), on nodes that commit
synchronously (a crashed worker keeps what it acknowledged, as production runs). The worker is stopped as
a crash stops its database (`pg_ctl stop -m immediate`: no checkpoint, recovery from its WAL at the
restart), while a server holds pooled connections to it; its clients are told (57P01) and its sockets
closed, so a host that vanishes without a word is not what this models."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, text

from pokna.db import migrate
from support.citus import CitusCluster, running_citus
from support.driver import new_api_key
from support.game_play import Api, Response
from support.servers import serving

pytestmark = pytest.mark.xdist_group("citus")

DEPOSITS = 12  # each tenant's, during the outage
PATIENCE_SECONDS = 60.0  # for a request to go through once its worker is back


def _worker_group(url: str, tenant_id: str) -> int:
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            return int(
                connection.scalar(
                    text(
                        "SELECT groupid FROM pg_dist_placement WHERE shardid = "
                        "get_shard_id_for_distribution_column('account', CAST(:tenant AS text))"
                    ),
                    {"tenant": tenant_id},
                )
            )
    finally:
        engine.dispose()


def _key_per_worker(cluster: CitusCluster, url: str) -> list[str]:
    """An API key of a tenant whose shards are on each worker, in the workers' order."""
    groups = _groups(cluster, url)
    found: dict[int, str] = {}
    for attempt in range(64):
        issued = new_api_key(url, f"Outpost {attempt}")
        found.setdefault(_worker_group(url, issued.tenant_id), issued.secret)
        if len(found) == len(groups):
            return [found[group] for group in groups]
    raise AssertionError(f"no tenant on every worker after 64: {found}")


def _groups(cluster: CitusCluster, url: str) -> list[int]:
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            return [
                int(
                    connection.scalar(
                        text("SELECT groupid FROM pg_dist_node WHERE nodeport = :port"), {"port": worker.port}
                    )
                )
                for worker in cluster.workers
            ]
    finally:
        engine.dispose()


def _until_posted(send: Callable[[], Response]) -> Response:
    """The same keyed request again until it is answered other than 503 (bounded)."""
    deadline = time.monotonic() + PATIENCE_SECONDS
    while True:
        answer = send()
        if answer.status_code != 503 or time.monotonic() > deadline:
            return answer
        time.sleep(0.5)


def _assert_retry_later(answer: Response) -> None:
    assert answer.json()["code"] == "database_unavailable", answer.text
    assert int(answer.headers["Retry-After"]) >= 1


def _keyed_deposit(api: Api, wallet: str, key: str) -> Callable[[], Response]:
    return lambda: api.post(f"/v1/accounts/{wallet}/deposits", {"amount": 1}, idempotency_key=key)


@pytest.mark.parametrize("served_by", ["coordinator", "workers"])
def test_a_workers_outage_stops_its_tenants_only_and_loses_nothing(served_by: str, tmp_path: Path) -> None:
    with running_citus(durable=True) as cluster:
        name = f"pokna_outage_{uuid.uuid4().hex[:8]}"
        url = cluster.new_database(name)
        migrate.upgrade(url)
        up_key, down_key = _key_per_worker(cluster, url)
        # The worker that goes down, listed first: libpq tries the hosts in order, so every pooled
        # connection is on it, and every one that replaces them must skip it.
        hosts = "&".join(f"host=127.0.0.1:{worker.port}" for worker in reversed(cluster.workers))
        served = url if served_by == "coordinator" else f"postgresql+psycopg://postgres@/{name}?{hosts}"
        with (
            serving({"POKNA_DATABASE_URL": served}, tmp_path / "served") as server,
            httpx.Client(base_url=server.base, timeout=60) as http,
        ):
            up, down = Api(http, up_key), Api(http, down_key)
            up_wallet, down_wallet = up.wallet(), down.wallet()
            # Both workers in use before the outage.
            for api, wallet in ((up, up_wallet), (down, down_wallet)):
                api.ok(api.deposit(wallet, 1), 201)
            seats = [up.wallet(50) for _ in range(3)]

            cluster.workers[1].halt("immediate")  # a crash: recovery from its WAL at the restart
            for _ in range(DEPOSITS):  # each at its first try
                answer = _keyed_deposit(up, up_wallet, f"up-{uuid.uuid4()}")()
                assert answer.status_code == 201, answer.text
            # A game's public link is distributed by its token, so a creation of the up worker's tenant
            # whose link would go to the worker that is down is refused too (503), never a 500.
            created = [
                up.post(
                    "/v1/games", {"vigo_account_id": seats[0], "player_account_ids": seats[1:], "stake": 5}
                )
                for _ in range(6)
            ]
            assert {answer.status_code for answer in created} <= {201, 503}, [a.text for a in created]
            for answer in created:
                if answer.status_code == 503:
                    _assert_retry_later(answer)
            refused_keys = []
            for _ in range(DEPOSITS):
                key = f"down-{uuid.uuid4()}"
                answer = _keyed_deposit(down, down_wallet, key)()
                assert answer.status_code in (201, 503), answer.text
                if answer.status_code == 503:
                    _assert_retry_later(answer)
                    refused_keys.append(key)
            assert len(refused_keys) == DEPOSITS  # its only worker is down: none of them went through

            cluster.workers[1].restart()
            for key in refused_keys:
                answer = _until_posted(_keyed_deposit(down, down_wallet, key))
                assert answer.status_code == 201, answer.text
                replayed = _keyed_deposit(down, down_wallet, key)()
                assert replayed.headers.get("Idempotent-Replayed") == "true", replayed.text

            assert up.balance(up_wallet) == 1 + DEPOSITS
            assert down.balance(down_wallet) == 1 + DEPOSITS
            assert up.trial_balance_total() == down.trial_balance_total() == 0
