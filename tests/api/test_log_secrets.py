"""Nothing secret reaches a real `pokna serve`'s log, whatever the client sends and whatever fails: API keys
(in a header, a query string, a cookie, a path), the service's own keys, server seeds, and the values of a
money request whose SQL fails (SQLAlchemy puts a statement's parameters in its error text)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import select, text

from pokna.db.engine import make_engine
from pokna.db.models import Game
from pokna_verify.fairness.seed_vault import open_server_seed
from support.driver import new_api_key
from support.servers import running_server
from support.sessions import make_sessionmaker

QUERY_KEY = "pk_in_a_query_5e1f0a"
UNKNOWN_KEY = "pk_unknown_bearer_77aa01"
OTHER_HEADER_KEY = "pk_in_x_api_key_3c3c3c"
COOKIE_SECRET = "cookie_secret_9f9f9f"
PATH_SECRET = "pk_in_a_path_0b0b0b"
REFERENCE = "psp-charge-secret-4242"
CARD = "4111111111111111"
AMOUNT = 987_654_321
IDEMPOTENCY_KEY = "idem-secret-d00d"

REFUSE_POSTINGS = [
    "CREATE FUNCTION refuse_posting() RETURNS trigger LANGUAGE plpgsql AS "
    "$$ BEGIN RAISE EXCEPTION 'posting refused by the test'; END $$",
    "CREATE TRIGGER refuse_posting BEFORE INSERT ON journal_transaction "
    "FOR EACH ROW EXECUTE FUNCTION refuse_posting()",
]


def _service_secrets() -> dict[str, str]:
    generated = subprocess.run(
        [str(Path(sys.executable).with_name("pokna")), "secrets", "generate", "--format", "json"],
        capture_output=True,
        check=True,
        text=True,
    )
    values: dict[str, str] = json.loads(generated.stdout)
    return {name: value for name, value in values.items() if name.startswith("POKNA_")}


def _money_requests(http: httpx.Client, bearer: dict[str, str], wallet: str) -> list[int]:
    statuses = []
    for kind in ("deposits", "withdrawals"):
        response = http.post(
            f"/v1/accounts/{wallet}/{kind}",
            json={"amount": AMOUNT, "reference": REFERENCE, "metadata": {"card": CARD}},
            headers={**bearer, "Idempotency-Key": f"{IDEMPOTENCY_KEY}-{kind}"},
        )
        statuses.append(response.status_code)
    return statuses


def test_no_secret_in_the_log_of_hostile_requests_and_failing_sql(database_url: str, tmp_path: Path) -> None:
    engine = make_engine(database_url)
    sessions = make_sessionmaker(engine)
    api_key = new_api_key(sessions, "Cantina").secret
    keys = _service_secrets()
    env = {"POKNA_ENV": "production", "POKNA_DATABASE_URL": database_url, **keys}
    bearer = {"Authorization": f"Bearer {api_key}"}
    statuses: dict[str, Any] = {}
    try:
        with running_server(env, tmp_path / "data") as base, httpx.Client(base_url=base, timeout=30) as http:
            port = base.rsplit(":", 1)[1]
            statuses["query"] = http.get(f"/v1/accounts/acct_x?api_key={QUERY_KEY}").status_code
            statuses["unknown"] = http.get(
                "/v1/ledger/trial-balance", headers={"Authorization": f"Bearer {UNKNOWN_KEY}"}
            ).status_code
            statuses["headers"] = http.get(
                "/v1/ledger/trial-balance",
                headers={"X-Api-Key": OTHER_HEADER_KEY, "Cookie": f"s={COOKIE_SECRET}"},
            ).status_code
            statuses["path"] = http.get(f"/v1/accounts/{PATH_SECRET}", headers=bearer).status_code
            statuses["nowhere"] = http.get(f"/{PATH_SECRET}/{api_key}").status_code
            wallets = [http.post("/v1/accounts", json={}, headers=bearer).json()["id"] for _ in range(2)]
            for wallet in wallets:  # enough for the withdrawal below to reach the SQL
                http.post(
                    f"/v1/accounts/{wallet}/deposits",
                    json={"amount": 2 * AMOUNT},
                    headers={**bearer, "Idempotency-Key": f"fund-{wallet}"},
                )
            game = http.post(
                "/v1/games",
                json={"vigo_account_id": wallets[0], "player_account_ids": [wallets[1]], "stake": 10},
                headers=bearer,
            ).json()
            statuses["link"] = http.get(game["fairness"]["public_url"]).status_code
            with engine.begin() as connection:
                for statement in REFUSE_POSTINGS:
                    connection.execute(text(statement))
            statuses["money"] = _money_requests(http, bearer, wallets[0])
            statuses["start"] = http.post(
                f"/v1/games/{game['id']}/actions",
                json={"type": "start", "account_id": wallets[0]},
                headers={**bearer, "Idempotency-Key": IDEMPOTENCY_KEY},
            ).status_code
        with sessions() as session:
            sealed = session.scalars(select(Game.sealed_server_seed).where(Game.id == game["id"])).one()
    finally:
        engine.dispose()
    server_seed = open_server_seed(sealed, bytes.fromhex(keys["POKNA_SEED_ENCRYPTION_KEY"]), game["id"])
    log = (tmp_path / f"serve-{port}.log").read_text()

    # Each hostile request was answered, and the failing SQL was reached (a 500, logged with its traceback).
    assert statuses == {
        "query": 401,
        "unknown": 401,
        "headers": 401,
        "path": 404,
        "nowhere": 404,
        "link": 200,
        "money": [500, 500],
        "start": 500,
    }
    entries = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    errors = [entry for entry in entries if entry.get("message") == "unhandled error"]
    assert {entry["route"] for entry in errors} == {
        "/v1/accounts/{account_id}/deposits",
        "/v1/accounts/{account_id}/withdrawals",
        "/v1/games/{game_id}/actions",
    }
    assert all("posting refused by the test" in entry["exception"] for entry in errors)
    # Each error is logged once, by Pokna, and the client's keep-alive connection survived it (one client
    # sent every request above).
    assert len(errors) == 3
    assert not [entry for entry in entries if "Exception in ASGI application" in entry["message"]]

    signing_key_body = keys["POKNA_SIGNING_KEY"].splitlines()[1]
    secrets = {
        "API key": api_key,
        "API key's hash": hashlib.sha256(api_key.encode()).hexdigest(),
        "API key in a query": QUERY_KEY,
        "unknown bearer key": UNKNOWN_KEY,
        "key in another header": OTHER_HEADER_KEY,
        "cookie": COOKIE_SECRET,
        "path": PATH_SECRET,
        "fairness link": game["fairness"]["public_url"].rsplit("/", 1)[1],
        "signing key": signing_key_body,
        "seed encryption key": keys["POKNA_SEED_ENCRYPTION_KEY"],
        "server seed": server_seed,
        "sealed server seed": sealed.split(".")[-1],
        "amount": str(AMOUNT),
        "reference": REFERENCE,
        "card": CARD,
    }
    leaked = [label for label, secret in secrets.items() if secret in log]
    assert not leaked, f"{leaked} in the log:\n{log}"
