"""The schema and the statements Citus could distribute by tenant (issue 25, docs/scaling.md), checked on a
plain PostgreSQL, fast and without Citus: the catalog of a migrated database against the one declared map
(`pokna.db.distribution`), and every statement that a game over
HTTP, a deposit, a withdrawal, the public link, a webhook delivery and a sweep run (captured by
pg_stat_statements with `track=all`, so the statements inside `ledger_post()`, `game_write()` and the
ledger's triggers too) against "a distributed table is read or locked only under a `tenant_id`
condition". The limits of that textual check: tests/support/distribution_checks.py. Citus itself is the
last word: tests/citus/ runs the schema, the journeys and the one-shard check on a real cluster.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import jsonschema
import pytest
import yaml
from fastapi.testclient import TestClient
from sqlalchemy import Engine, text

from pokna.app import create_app
from pokna.db.engine import make_engine
from pokna.db.types import utc_now
from pokna.dealer.service import Clock
from pokna.outbox import EVENT_TYPES
from pokna.runtime import Runtime
from pokna.settings import Environment, Settings
from support.databases import PostgresDatabases
from support.distribution_checks import catalog_findings, statement_findings
from support.game_play import Api, play
from support.postgres import PostgresUnavailable, start_cluster
from support.sessions import make_sessionmaker
from support.sweeping import swept
from support.tenant_api import new_tenant
from support.webhook_receiver import running_receiver
from support.webhook_worker import FAST, drain

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "deploy" / "citus" / "docker-compose.yml"
TRACING = (
    "-c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all "
    "-c pg_stat_statements.max=20000 -c pg_stat_statements.track_utility=off"
)


def test_the_schema_has_the_shape_citus_distributes(engine: Engine) -> None:
    with engine.connect() as connection:
        findings = catalog_findings(connection)
    assert findings == [], "\n".join(findings)


@pytest.fixture(scope="module")
def traced_url() -> Iterator[str]:
    """A migrated database on a cluster of its own, which counts every statement, nested ones too."""
    try:
        cluster = start_cluster(extra_options=TRACING)
    except PostgresUnavailable as exc:
        pytest.skip(f"PostgreSQL unavailable: {exc}")
    databases = PostgresDatabases(cluster.url, prefix="pokna_traced")
    try:
        url = databases.migrated()
        with make_engine(url).connect() as connection:
            connection.execute(text("CREATE EXTENSION pg_stat_statements"))
            connection.commit()
        yield url
    finally:
        databases.close()
        cluster.stop()


def captured_statements(traced_url: str, tmp_path: Path) -> list[str]:
    settings = Settings(env=Environment.TEST, data_dir=tmp_path / "data", database_url=traced_url, **FAST)
    engine = make_engine(traced_url)
    runtime = Runtime.from_settings(settings)
    try:
        with TestClient(create_app(settings, runtime)) as client:
            tenant = new_tenant(client, make_sessionmaker(engine))
            with engine.connect() as connection:
                connection.execute(text("SELECT pg_stat_statements_reset()"))
                connection.commit()
            with running_receiver() as receiver:
                made = tenant.post(
                    "/v1/webhooks/endpoints", {"url": receiver.url, "event_types": list(EVENT_TYPES)}
                )
                assert made.status_code == 201, made.text
                api = Api(client, tenant.api_key)
                wallets = [api.wallet(100) for _ in range(3)]
                api.ok(api.withdraw(wallets[0], 7), 201)
                game = play([api], api.create_game(wallets[0], wallets[1:], stake=5))
                api.events(game["id"])
                api.proof(game["id"])
                api.ok(api.get(f"/v1/accounts/{wallets[1]}/transactions"))
                public = client.get(game["fairness"]["public_url"])
                assert public.status_code == 200, public.text
                abandoned = api.create_game(wallets[1], [wallets[2]], stake=1)
                drain(runtime)
            later = Clock(utc_now() + timedelta(days=30), timedelta(minutes=10))
            report = swept(runtime, later, webhook_retention=timedelta(days=7))
            assert report.timeouts >= 1
            assert api.game(abandoned["id"])["status"] == "cancelled"
        with engine.connect() as connection:
            return list(
                connection.scalars(
                    text(
                        "SELECT query FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid "
                        "WHERE d.datname = current_database() ORDER BY query"
                    )
                )
            )
    finally:
        engine.dispose()


def test_every_statement_of_the_hot_paths_names_its_tenant(traced_url: str, tmp_path: Path) -> None:
    statements = captured_statements(traced_url, tmp_path)
    assert any("ledger_head" in statement for statement in statements), "nested statements were not traced"
    findings = [
        f"{'; '.join(found)}:\n    {' '.join(statement.split())[:400]}"
        for statement in statements
        if (found := statement_findings(statement))
    ]
    assert findings == [], f"{len(findings)} statements:\n" + "\n".join(findings)


@pytest.mark.parametrize(
    ("statement", "refused"),
    [
        ("SELECT id FROM account WHERE id = ANY($1) ORDER BY id FOR NO KEY UPDATE", True),
        ("SELECT id FROM account WHERE tenant_id = $1 AND id = ANY($2) FOR NO KEY UPDATE", False),
        ("INSERT INTO game_event (game_id, seq) SELECT $1, 2", True),
        ("INSERT INTO game_event (tenant_id, game_id, seq) VALUES ($1, $2, $3)", False),
        ("SELECT g.id FROM game g JOIN game_seat s ON s.game_id = g.id WHERE g.tenant_id = $1", True),
        (
            "SELECT g.id FROM game g JOIN game_seat s ON s.tenant_id = g.tenant_id AND s.game_id = g.id "
            "WHERE g.tenant_id = $1",
            False,
        ),
        ("SELECT id FROM tenant WHERE id = $1", False),
        ("UPDATE webhook_delivery SET status = $1 WHERE id = $2", True),
    ],
)
def test_the_statement_check_tells_a_tenant_condition_apart(statement: str, refused: bool) -> None:
    assert bool(statement_findings(statement)) is refused


def test_the_citus_compose_file_matches_the_compose_specification() -> None:
    """No Docker engine runs here: the file is checked against the Compose specification's schema, for the
    engine the tests run (Citus 14 on PostgreSQL 18, tests/support/citus.py) and for the order it must
    start in (workers registered, then `pokna db upgrade`, which distributes, then served)."""
    compose = yaml.safe_load(COMPOSE.read_text())
    schema = json.loads((ROOT / "tests" / "fixtures" / "compose_spec.json").read_text())
    jsonschema.Draft201909Validator(schema).validate(compose)
    services = compose["services"]
    assert {"coordinator", "worker1", "worker2"} <= services.keys()
    for node in ("coordinator", "worker1", "worker2", "cluster-init"):
        assert services[node]["image"] == "citusdata/citus:14.0", node
    assert "cluster-init" in services["migrate"]["depends_on"]
    assert services["migrate"]["command"] == ["pokna", "db", "upgrade"]
    for pokna in ("api", "sweeper", "webhooks"):
        assert "migrate" in services[pokna]["depends_on"]
        assert "@coordinator:" in services[pokna]["environment"]["POKNA_DATABASE_URL"]
