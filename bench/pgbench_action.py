"""The physical limit of a game action: PostgreSQL running the action's own statements, with no client cost
(issue 24). pgbench (the embedded PostgreSQL's own) runs, per transaction, what the product's keyed action
sends in its three round trips, on the real schema and functions:

    INSERT INTO idempotency_record ... ON CONFLICT DO NOTHING      (the claim, autocommit; keyed only)
    BEGIN
    SELECT claim_token, created_at FROM idempotency_record ... FOR UPDATE   (the hold; keyed only)
    <LOCK_GAME_AND_SEATS>                                          (the game's lock with seats and balances)
    SELECT game_write(tenant, bench_step(...))                     (one step: a posting, two events, an outbox row)
    COMMIT

`bench_step` (bench-only, installed here) builds the step's document on the server, which the product
builds in Python; its own cost is measured alone (`--only-documents`) and reported beside the result, so
the ceiling can be read without it. Each client has its own tenant (as issue 24's ceiling was measured:
8 clients, one tenant each), its own game and two wallets it moves 1 credit between.

    .venv/bin/python bench/pgbench_action.py [--clients 8] [--seconds 10] [--tenants 8] [--unkeyed]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

from games_support import migrated_cluster
from sqlalchemy import text
from sqlalchemy.engine import make_url

from pokna.db.engine import make_engine, make_sessionmaker, unit_of_work
from pokna.dealer import service as dealer
from pokna.dealer.store_postgres import LOCK_GAME_AND_SEATS
from pokna.ledger import deposit, open_account
from pokna.service_keys import load_service_keys
from pokna.settings import Settings
from pokna.tenants.service import create_tenant
from support.postgres import find_bindir  # type: ignore[import-not-found,unused-ignore]

BENCH_STEP = r"""
CREATE OR REPLACE FUNCTION bench_step(p_tenant text, p_game text, p_payer text, p_payee text)
RETURNS json LANGUAGE plpgsql AS $$
DECLARE
    g game;
    v_txn text := 'txn_' || replace(gen_random_uuid()::text, '-', '');
    v_now timestamptz := clock_timestamp();
BEGIN
    SELECT * INTO g FROM game WHERE id = p_game;
    RETURN json_build_object(
        'steps', json_build_array(json_build_object(
            'game_id', p_game, 'previous_version', g.version,
            'game', json_build_object('status', g.status, 'state', g.state, 'version', g.version + 1,
                'event_count', g.event_count + 2, 'revealed_server_seed', g.revealed_server_seed,
                'game_client_seed', g.game_client_seed, 'proof', g.proof, 'turn_deadline_at', g.turn_deadline_at,
                'started_at', g.started_at, 'ended_at', g.ended_at),
            'seats', '[]'::json,
            'events', json_build_array(json_build_object('game_id', p_game, 'seq', g.event_count + 1,
                'kind', 'action', 'payload', json_build_object('action', 'roll', 'seat', 1), 'occurred_at', v_now)),
            'money', json_build_array(json_build_object('n', 1, 'seq', g.event_count + 2, 'occurred_at', v_now,
                'head', '{"kind":"ante","payer":1,"payee":2,"amount":1,"journal_transaction_id":"' || v_txn || '"')),
            'rolls', '[]'::json,
            'batch', json_build_object(
                'accounts', ARRAY[least(p_payer, p_payee), greatest(p_payer, p_payee)],
                'expected_ids', ARRAY[p_payer, p_payee],
                'expected_balances', ARRAY[(SELECT balance FROM account WHERE id = p_payer),
                    (SELECT balance FROM account WHERE id = p_payee)],
                't_id', ARRAY[v_txn], 't_kind', ARRAY['ante'], 't_reference', ARRAY[p_game],
                't_metadata', ARRAY['{"game_id":"' || p_game || '"}'], 't_idempotency_key', ARRAY[NULL::text],
                't_request_hash', ARRAY[NULL::text], 't_posting_count', ARRAY[2], 't_created_at', ARRAY[v_now],
                't_before_prev', ARRAY['\x7b'], 't_before_seq', ARRAY['\x2c'], 't_rest', ARRAY['\x7d'],
                'p_id', ARRAY['pst_' || md5(v_txn || '0'), 'pst_' || md5(v_txn || '1')],
                'p_transaction', ARRAY[1, 1], 'p_leg', ARRAY[0, 1], 'p_account_id', ARRAY[p_payer, p_payee],
                'p_amount', ARRAY[-1, 1], 'p_currency', ARRAY['CREDIT', 'CREDIT']))),
        'outbox', json_build_array(json_build_object('id', 'msg_' || md5(v_txn), 'type', 'game.turn',
            'ordering_key', p_game, 'body', '{"type":"game.turn"}', 'occurred_at', v_now)),
        'answer', NULL);
END
$$;
CREATE TABLE IF NOT EXISTS bench_pgbench_client (
    client_id int PRIMARY KEY, tenant_id text, game_id text, payer text, payee text
);
"""


def _script(keyed: bool, only_documents: bool) -> str:
    lock = LOCK_GAME_AND_SEATS.replace("%(game_id)s", ":g").replace("%(tenant_id)s", ":t")
    parts = [
        "SELECT tenant_id AS t, game_id AS g, payer AS a, payee AS b "
        "FROM bench_pgbench_client WHERE client_id = :client_id \\gset",
        # Alternate the direction, so that no wallet runs dry.
        "\\set flip random(0, 1)",
    ]
    if only_documents:
        return "\n".join([*parts, "SELECT bench_step(:t, :g, :a, :b);", ""])
    if keyed:
        parts.append(
            "INSERT INTO idempotency_record (tenant_id, key, request_fingerprint, claim_token, created_at, "
            "expires_at) VALUES (:t, md5(random()::text), md5(random()::text), md5(random()::text), now(), "
            "now() + interval '1 day') ON CONFLICT (tenant_id, key) DO NOTHING RETURNING key \\gset k_"
        )
    parts.append("BEGIN;")
    if keyed:
        parts.append(
            "SELECT claim_token, created_at FROM idempotency_record WHERE tenant_id = :t AND key = :k_key "
            "FOR UPDATE;"
        )
    parts += [
        " ".join(lock.split()) + ";",
        "\\if :flip",
        "SELECT game_write(:t, bench_step(:t, :g, :a, :b));",
        "\\else",
        "SELECT game_write(:t, bench_step(:t, :g, :b, :a));",
        "\\endif",
        "COMMIT;",
        "",
    ]
    return "\n".join(parts)


def _set_up(url: str, data_dir: Path, tenants: int, clients: int) -> None:
    keys = load_service_keys(Settings(data_dir=data_dir))
    clock = dealer.Clock(now=datetime.now(UTC), open_game_ttl=timedelta(days=30))
    engine = make_engine(url)
    sessions = make_sessionmaker(engine)
    with unit_of_work(sessions) as session:
        session.connection().exec_driver_sql(BENCH_STEP)
        tenant_ids = [create_tenant(session, f"pgbench {index}").id for index in range(tenants)]
        for client in range(clients):
            tenant_id = tenant_ids[client % tenants]
            wallets = []
            for seat in range(3):
                wallet = open_account(
                    session, tenant_id=tenant_id, kind="player_wallet", external_id=f"c{client}s{seat}"
                ).id
                deposit(session, tenant_id=tenant_id, account_id=wallet, amount=10**12)
                wallets.append(wallet)
            game = dealer.create_game(
                session, keys, clock, tenant_id, dealer.NewGame(wallets[0], wallets[1:], stake=5)
            )
            session.execute(
                text("INSERT INTO bench_pgbench_client VALUES (:c, :t, :g, :a, :b)"),
                {"c": client, "t": tenant_id, "g": game.id, "a": wallets[1], "b": wallets[2]},
            )
        session.execute(text("ANALYZE"))
    engine.dispose()


def _pgbench(url: str, script: Path, clients: int, seconds: int) -> float:
    target = make_url(url)
    command = [
        str(find_bindir() / "pgbench"), "-n", "-M", "prepared", "-c", str(clients), "-j", "2",
        "-T", str(seconds), "-f", str(script),
        "-h", target.host or "127.0.0.1", "-p", str(target.port or 5432), "-U", target.username or "postgres",
        target.database or "postgres",
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"pgbench failed:\n{done.stdout}\n{done.stderr}")
    found = re.search(r"tps = ([0-9.]+)", done.stdout)
    assert found is not None, done.stdout
    return float(found.group(1))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--tenants", type=int, default=8)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--unkeyed", action="store_true", help="the action without an Idempotency-Key")
    options = parser.parse_args()
    with migrated_cluster() as database, tempfile.TemporaryDirectory(prefix="pokna-pgbench-") as scratch:
        _set_up(database.url, Path(scratch) / "data", options.tenants, options.clients)
        results: dict[str, list[float]] = {}
        for name, only_documents in (
            ("action", False),
            ("documents only", True),
            ("action", False),
            ("action", False),
        ):
            script = Path(scratch) / f"{name.replace(' ', '_')}.sql"
            script.write_text(_script(not options.unkeyed, only_documents))
            tps = _pgbench(database.url, script, options.clients, options.seconds)
            results.setdefault(name, []).append(tps)
            print(f"{name:<16} {tps:>9.1f} tx/s", flush=True)
    action = sorted(results["action"])[len(results["action"]) // 2]
    print(
        f"\n{'keyed' if not options.unkeyed else 'unkeyed'} action statements: {action:.0f} tx/s "
        f"({options.clients} clients, {options.tenants} tenants); building the document alone: "
        f"{results['documents only'][0]:.0f}/s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
