"""Every hot statement runs on one shard, and one tenant's request commits on one worker without two-phase
commit, held on the live Citus cluster (issue 34, docs/scaling.md "Every statement names its tenant").

The database is set so that Citus refuses, rather than runs, any statement it would split into several
tasks (`citus.multi_task_query_log_level = error`, on the coordinator and, by Citus's own propagation of
ALTER DATABASE, on the workers where the delegated functions run their statements) or in steps through the
coordinator (`citus.max_intermediate_result_size = 0`), each statement planned with its values. Then every request an
integrating app makes on its hot path is made over HTTP: a fan-out statement anywhere on that path answers
500 and fails the test. `pg_dist_transaction` on the coordinator counts each two-phase commit's
participants; the requests that must commit on one worker in one phase must not add to it.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TypeVar
from uuid import uuid4

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text

from pokna.app import create_app
from pokna.db.engine import make_engine
from pokna.ledger import verify_export
from pokna.public_log.sequencer import LogSigner
from pokna.runtime import Runtime
from pokna.settings import Environment, Settings
from pokna_verify.bundle.report import Verdict
from pokna_verify.bundle.scan import verify_bundle
from support.audit_bundles import play_books
from support.game_logs import sequence_all
from support.game_play import Api, Game, obliging
from support.sessions import make_sessionmaker
from support.tenant_api import api_key_on

pytestmark = pytest.mark.xdist_group("citus")
T = TypeVar("T")


@pytest.fixture
def single_shard_url(citus_database_url: str) -> str:
    admin = create_engine(citus_database_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        name = connection.scalar(text("SELECT current_database()"))
        connection.execute(text(f'ALTER DATABASE "{name}" SET citus.multi_task_query_log_level = error'))
        # Planned with their values: a generic plan of a statement inside a function names its tenant as a
        # parameter, and Citus plans it over every shard and prunes to one only when it runs (seen here:
        # the refusal above on one-shard statements of game_write() from its sixth call on a connection).
        connection.execute(text(f'ALTER DATABASE "{name}" SET plan_cache_mode = force_custom_plan'))
        # Nor may a statement be planned in steps whose rows go through the coordinator (a subquery or CTE
        # Citus cannot send to the shard whole: written to a file there and read back, about a fifth of the
        # coordinator's CPU on a keyed request while the claim was one such statement).
        connection.execute(text(f'ALTER DATABASE "{name}" SET citus.max_intermediate_result_size = 0'))
    admin.dispose()
    return citus_database_url


def test_a_fan_out_is_refused_in_this_database(single_shard_url: str) -> None:
    """The trap is armed: a statement over every shard is refused here (so the test below can fail)."""
    engine = create_engine(single_shard_url)
    try:
        with engine.connect() as connection, pytest.raises(Exception, match="multi-task query"):
            connection.execute(text("SELECT count(*) FROM account"))
    finally:
        engine.dispose()


class TwoPhaseCommits:
    """The participants `pg_dist_transaction` records, per kind of request."""

    def __init__(self, url: str) -> None:
        self.admin = create_engine(url, isolation_level="AUTOCOMMIT")
        self.counts: dict[str, list[int]] = {}

    def total(self) -> int:
        with self.admin.connect() as connection:
            return int(connection.scalar(text("SELECT count(*) FROM pg_dist_transaction")) or 0)

    def rows(self) -> set[tuple[int, str]]:
        """Each participant of each two-phase commit so far: its node group and its prepared transaction's
        name, `citus_<initiator>_<pid>_<transaction>_<connection>`."""
        with self.admin.connect() as connection:
            found = connection.execute(text("SELECT groupid, gid FROM pg_dist_transaction"))
            return {(int(group), str(gid)) for group, gid in found}

    def tenant_of_link(self, token: str) -> str:
        with self.admin.connect() as connection:
            query = text("SELECT tenant_id FROM game_link WHERE public_token = :token")
            return str(connection.scalar(query, {"token": token}))

    def group_of(self, table: str, key: str) -> int:
        """The node group holding the shard of `table` that `key` hashes to."""
        with self.admin.connect() as connection:
            return int(
                connection.scalar(
                    text(
                        "SELECT groupid FROM pg_dist_placement WHERE shardid = "
                        "get_shard_id_for_distribution_column(CAST(:table AS regclass), CAST(:key AS text))"
                    ),
                    {"table": table, "key": key},
                )
            )

    def of(self, kind: str, request: Callable[[], T]) -> T:
        before = self.total()
        answer = request()
        self.counts.setdefault(kind, []).append(self.total() - before)
        return answer


def test_every_hot_request_runs_on_one_shard_in_one_phase(single_shard_url: str, tmp_path: Path) -> None:
    api_key = api_key_on(single_shard_url, "Mos Espa")
    settings = Settings(env=Environment.TEST, data_dir=tmp_path / "data", database_url=single_shard_url)
    engine = make_engine(single_shard_url)
    runtime = Runtime.from_settings(settings)
    commits = TwoPhaseCommits(single_shard_url)
    try:
        with TestClient(create_app(settings, runtime), raise_server_exceptions=False) as client:
            api = Api(client, api_key)
            opened = commits.of("account", partial(api.post, "/v1/accounts", {}))
            wallets = [api.ok(opened, 201)["id"]]
            wallets += [api.wallet() for _ in range(2)]
            for wallet in wallets:
                api.ok(commits.of("keyed deposit", partial(api.deposit, wallet, 100)), 201)
            key = f"move-{uuid4()}"
            path = f"/v1/accounts/{wallets[0]}/withdrawals"
            for kind in ("keyed withdrawal", "replay"):
                answer = commits.of(kind, partial(api.post, path, {"amount": 3}, idempotency_key=key))
                api.ok(answer, 201)
            assert answer.headers.get("Idempotent-Replayed") == "true", answer.headers

            body = {"vigo_account_id": wallets[0], "player_account_ids": wallets[1:], "stake": 5}
            games = _creations(api, body, commits)
            step = 0
            for game in games:
                while game["status"] not in ("settled", "cancelled"):
                    # Keyed and key-less in turn: both forms of an action.
                    action_key = f"act-{uuid4()}" if step % 2 else None
                    decision = obliging(game)
                    act = partial(api.act, game["id"], decision, idempotency_key=action_key)
                    game = api.ok(commits.of("action", act))
                    step += 1
            played = games[0]["id"]
            api.game(played)
            assert api.events(played)
            assert api.proof(played)["server_seed"]
            api.ok(api.get(f"/v1/accounts/{wallets[1]}"))
            api.ok(api.get(f"/v1/accounts/{wallets[1]}/transactions"))
            _reads_beside_the_check(api, wallets)
            _webhook_writes(api, client, commits)
            public = client.get(games[0]["fairness"]["public_url"])
            assert public.status_code == 200, public.text
    finally:
        commits.admin.dispose()
        engine.dispose()
    assert step >= 4
    one_phase = ("account", "keyed deposit", "keyed withdrawal", "replay", "action", "webhook write")
    assert {kind: set(commits.counts[kind]) for kind in one_phase} == {kind: {0} for kind in one_phase}


def _webhook_writes(api: Api, client: TestClient, commits: TwoPhaseCommits) -> None:
    """The webhooks' writes in the keyed transaction (pokna.webhooks.endpoints, pokna.webhooks.deliveries),
    keyed and key-less: each statement bound to the tenant, each committed in one phase."""
    hook = {"url": "http://127.0.0.1:9/hooks", "event_types": ["game.turn"]}
    made = partial(api.post, "/v1/webhooks/endpoints", hook, idempotency_key=f"hook-{uuid4()}")
    path = f"/v1/webhooks/endpoints/{api.ok(commits.of('webhook write', made), 201)['id']}"
    keyed = {**api.headers, "Idempotency-Key": f"hook-{uuid4()}"}
    change = partial(client.patch, path, json={"description": "lobby"}, headers=keyed)
    assert api.ok(commits.of("webhook write", change))["description"] == "lobby"
    api.ok(commits.of("webhook write", partial(api.post, f"{path}/rotate-secret")))
    missing = api.post(f"{path}/deliveries/whdl_unknown/retry")
    assert missing.status_code == 404, missing.text
    deleted = partial(client.delete, path, headers=api.headers)
    assert api.ok(commits.of("webhook write", deleted))["deleted"] is True


def _reads_beside_the_check(api: Api, wallets: list[str]) -> None:
    """The reads on the driver (pokna.tenants.authentication.read_beside) with what they read: each of
    their statements bound to the tenant, none fanned out (the database refuses a fan-out)."""
    page = api.ok(api.get(f"/v1/accounts/{wallets[1]}/transactions", limit=1))
    api.ok(api.get(f"/v1/accounts/{wallets[1]}/transactions", limit=1, starting_after=page["next_cursor"]))
    api.ok(api.get("/v1/ledger/trial-balance"))
    api.ok(api.post("/v1/ledger/checkpoints"), 201)
    assert api.ok(api.get("/v1/ledger/checkpoints"))
    api.ok(api.get("/v1/tenant/settings"))
    table = api.ok(api.post("/v1/tables", {"account_ids": wallets, "stake": 5}), 201)
    api.ok(api.post(f"/v1/tables/{table['id']}/rounds"), 201)
    assert api.ok(api.get(f"/v1/tables/{table['id']}"))["rounds"]
    hook = {"url": "http://127.0.0.1:9/hooks", "event_types": ["game.turn"]}
    endpoint = api.ok(api.post("/v1/webhooks/endpoints", hook), 201)["id"]
    assert api.ok(api.get("/v1/webhooks/endpoints"))["data"]
    api.ok(api.get(f"/v1/webhooks/endpoints/{endpoint}"))
    deliveries = f"/v1/webhooks/endpoints/{endpoint}/deliveries"
    api.ok(api.get(deliveries, status="pending", starting_after="99"))


MOST_CREATIONS = 24
"""Games created until one link has landed on the tenant's worker and one on the other (each a coin's
toss: both within 24 but for a chance of 2 in 2**24)."""


def _creations(api: Api, body: dict[str, object], commits: TwoPhaseCommits) -> list[Game]:
    """Games created, keyed and key-less in turn, until both places of a link were seen. A game's link lands
    on the shard of its token (docs/scaling.md, "The public link"): on the tenant's worker the creation
    commits there in one phase (no row in pg_dist_transaction); on the other worker in exactly one
    two-phase commit, over those two workers (a row for each)."""
    games: list[Game] = []
    places: set[bool] = set()
    while places != {True, False} and len(games) < MOST_CREATIONS:
        key = f"game-{uuid4()}" if len(games) % 2 else None
        before = commits.rows()
        game = api.ok(api.post("/v1/games", body, idempotency_key=key), 201)
        added = commits.rows() - before
        token = game["fairness"]["public_url"].rsplit("/", 1)[-1]
        tenant_group = commits.group_of("journal_transaction", commits.tenant_of_link(token))
        link_group = commits.group_of("game_link", token)
        places.add(tenant_group == link_group)
        if tenant_group == link_group:
            assert added == set(), (game["id"], added)
        else:
            assert {group for group, _ in added} == {tenant_group, link_group}, added
            assert len(added) == 2, added
            assert len({gid.rsplit("_", 1)[0] for _, gid in added}) == 1, added  # one transaction
        games.append(game)
    assert places == {True, False}, places
    return games


def test_the_export_and_the_audit_bundle_ask_one_shard_per_statement(
    single_shard_url: str, tmp_path: Path
) -> None:
    """Every statement of the ledger export and the audit bundle (its public log's reads too) names the
    bound tenant (issue 45: the export's postings named the journal row's `t.tenant_id`, and each page
    asked all 32 shards): in this database a statement over several shards is refused, so a fan-out
    answers 500 here."""
    settings = Settings(env=Environment.TEST, data_dir=tmp_path / "data", database_url=single_shard_url)
    engine = make_engine(single_shard_url)
    runtime = Runtime.from_settings(settings)
    try:
        with TestClient(create_app(settings, runtime), raise_server_exceptions=False) as client:
            books = play_books(client, make_sessionmaker(engine), games=3)
            exported = books.api.get("/v1/ledger/export", format="jsonl")
            assert exported.status_code == 200, exported.text
            report = verify_export(exported.text.splitlines())
            assert report.valid, report.findings
            assert len(exported.text.splitlines()) > 3
            signer = LogSigner("pokna.test/games", runtime.keys.signing_key)
            assert sequence_all(runtime.aio, signer) == 3  # the bundle then reads the log too
            bundle = books.bundle()
    finally:
        engine.dispose()
    assert sum('"type":"pokna.log.leaf"' in line for line in bundle) == 3
    checked = verify_bundle(bundle, keys=books.key_ring)
    assert checked.findings == [], checked.to_json()
    assert checked.verdict is Verdict.VALID
    assert checked.transactions > 3
