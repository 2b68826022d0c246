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
    .venv/bin/python bench/pgbench_action.py --compare [--rounds 3] [--clients 8] [--seconds 10] [--one-chain-too]

`--compare` (issue 25) sets up both shapes in one database, the clients spread over `--clients` tenants
(one each) and the same number of clients all in one tenant, and alternates them phase by phase, for two
workloads: the keyed action as above, with `game_write()` and COMMIT sent in one pipeline as the product
sends them (so no client turn under the tenant's ledger head), and a bare posting, one autocommit
`ledger_post()` call of one two-leg transfer between two wallets, and a deposit (the same call between a
wallet and the tenant's external-funding sub-account of the chain it posts on, as every deposit and
withdrawal posts). Each one-tenant phase is divided by the mean of the
eight-tenant phases of the same workload just before and after it. Each game's transfers go on the chain
the product would post them on (`chain_for(game id)`, migration 0014); `--one-chain-too` adds a phase of the
one tenant with every posting on chain 0, as before 0014, for the before/after in one run.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import re
import subprocess
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

from games_support import migrated_cluster
from psycopg import AsyncConnection
from sqlalchemy import Engine, text
from sqlalchemy.engine import make_url

from pokna.db.backend import conninfo_of
from pokna.db.engine import make_engine
from pokna.dealer import service as dealer
from pokna.dealer.store_postgres import LOCK_GAME_AND_SEATS
from pokna.ledger import chain_for
from pokna.service_keys import ServiceKeys, load_service_keys
from pokna.settings import Settings
from support.driver import create_tenant, funding_account, issue_api_key, open_account  # type: ignore[import-not-found,unused-ignore]
from support.money import Teller, teller_on  # type: ignore[import-not-found,unused-ignore]
from support.postgres import find_bindir  # type: ignore[import-not-found,unused-ignore]
from support.sessions import make_sessionmaker, unit_of_work  # type: ignore[import-not-found,unused-ignore]

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
        'version', 1,
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
                'payload', json_build_object('kind', 'ante', 'payer', 1, 'payee', 2, 'amount', 1,
                    'journal_transaction_id', v_txn, 'ledger_seq', NULL))),
            'rolls', '[]'::json,
            'batch', json_build_object(
                'version', 1,
                'chain', (SELECT chain FROM bench_pgbench_client WHERE game_id = p_game),
                'accounts', ARRAY[least(p_payer, p_payee), greatest(p_payer, p_payee)],
                -- A game decides on its wallets' balances; a deposit on none (the funding account is shared).
                'expected_balances', (SELECT coalesce(json_object_agg(id, balance), '{}') FROM account
                    WHERE id IN (p_payer, p_payee) AND kind = 'player_wallet'),
                'transactions', json_build_array(json_build_object('id', v_txn, 'kind', 'ante',
                    'reference', p_game, 'metadata', '{"game_id":"' || p_game || '"}', 'created_at', v_now,
                    'before_prev', '\x7b', 'before_seq', '\x2c', 'rest', '\x7d',
                    'postings', json_build_array(
                        json_build_object('id', 'pst_' || md5(v_txn || '0'), 'account_id', p_payer, 'amount', -1,
                            'currency', 'CREDIT'),
                        json_build_object('id', 'pst_' || md5(v_txn || '1'), 'account_id', p_payee, 'amount', 1,
                            'currency', 'CREDIT'))))))),
        'outbox', json_build_array(json_build_object('id', 'msg_' || md5(v_txn), 'type', 'game.turn',
            'ordering_key', p_game, 'body', '{"type":"game.turn"}', 'occurred_at', v_now)),
        'answer', NULL);
END
$$;
CREATE TABLE IF NOT EXISTS bench_pgbench_client (
    client_id int PRIMARY KEY, tenant_id text, game_id text, payer text, payee text, chain smallint, funding text
);
"""


def _script(
    keyed: bool,
    only_documents: bool,
    *,
    pipelined: bool = False,
    posting: bool = False,
    deposit: bool = False,
    function: str = "game_write",
) -> str:
    """`pipelined`: game_write() and COMMIT in one pipeline, as pokna.dealer.action.action_transaction sends them. `posting`:
    instead of the action, one autocommit ledger_post() of the step's transfer. The client row is
    `client_id + :base` (pgbench's `-D base=N`, always given). `deposit`: the posting moves 1 between the
    client's wallet and its tenant's external-funding account (a deposit, then a withdrawal), as deposits do."""
    lock = LOCK_GAME_AND_SEATS.replace("%(game_id)s", ":g").replace("%(tenant_id)s", ":t")
    parts = [
        f"\\set deposit {int(deposit)}",
        "\\set row :client_id + :base",
        "SELECT tenant_id AS t, game_id AS g, payer AS a, CASE WHEN :deposit = 1 THEN funding ELSE payee END AS b "
        "FROM bench_pgbench_client WHERE client_id = :row \\gset",
        # Alternate the direction, so that no wallet runs dry.
        "\\set flip random(0, 1)",
    ]
    if posting:
        step = "bench_step(:t, :g, CASE WHEN :flip = 1 THEN :a ELSE :b END, CASE WHEN :flip = 1 THEN :b ELSE :a END)"
        return "\n".join(
            [
                *parts,
                # A refusal is an error (division by zero), so that pgbench never counts it as a posting.
                f"SELECT 1 / (status = 'posted')::int FROM ledger_post(:t, ({step}->'steps'->0->'batch')::jsonb);",
                "",
            ]
        )
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
    if pipelined:
        step = "bench_step(:t, :g, CASE WHEN :flip = 1 THEN :a ELSE :b END, CASE WHEN :flip = 1 THEN :b ELSE :a END)"
        parts += [
            " ".join(lock.split()) + ";",
            "\\startpipeline",
            f"SELECT {function}(:t, {step});",
            "COMMIT;",
            "\\endpipeline",
            "",
        ]
        return "\n".join(parts)
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


async def _create_games(
    engine: Engine, keys: ServiceKeys, clock: dealer.Clock, placed: list[str], seats_of: list[list[str]]
) -> list[str]:
    connection = await AsyncConnection.connect(
        conninfo_of(engine.url.render_as_string(hide_password=False)), autocommit=True
    )
    try:
        game_ids = []
        for tenant_id, wallets in zip(placed, seats_of, strict=True):
            terms = dealer.NewGame(wallets[0], wallets[1:], stake=5)
            created = await dealer.create_game(
                connection, keys, clock, dealer.Caller(tenant_id=tenant_id), None, terms
            )
            game_ids.append(json.loads(created.body)["id"])
        return game_ids
    finally:
        await connection.close()


def _set_up(url: str, data_dir: Path, tenants: int, clients: int, *, one_tenant_too: bool = False) -> None:
    """Clients 0 .. clients-1 spread round-robin over `tenants`; with `one_tenant_too`, clients `clients` ..
    2*clients-1 as well, all in one more tenant. Every wallet is funded as its tenant's app funds it
    (support.money: the deposit route's service function, under the tenant's API key)."""
    keys = load_service_keys(Settings(data_dir=data_dir))
    clock = dealer.Clock(now=datetime.now(UTC), open_game_ttl=timedelta(days=30))
    engine = make_engine(url)
    sessions = make_sessionmaker(engine)
    api_keys: dict[str, str] = {}
    wallets_of: dict[str, list[str]] = {}
    tenant_ids = [create_tenant(engine, f"pgbench {index}").id for index in range(tenants)]
    placed = [tenant_ids[client % tenants] for client in range(clients)]
    if one_tenant_too:
        alone = create_tenant(engine, "pgbench alone").id
        placed += [alone] * clients
    for tenant_id in dict.fromkeys(placed):
        api_keys[tenant_id] = issue_api_key(engine, tenant_id).secret
    with unit_of_work(sessions) as session:
        session.connection().exec_driver_sql(BENCH_STEP)
        seats_of = [
            [
                open_account(
                    session, tenant_id=tenant_id, kind="player_wallet", external_id=f"c{client}s{seat}"
                ).id
                for seat in range(3)
            ]
            for client, tenant_id in enumerate(placed)
        ]
    # Games are created as clients create them (pokna.dealer.creating, the async path POST /v1/games takes).
    game_ids = asyncio.run(_create_games(engine, keys, clock, placed, seats_of))
    with unit_of_work(sessions) as session:
        for client, (tenant_id, wallets, game_id) in enumerate(zip(placed, seats_of, game_ids, strict=True)):
            wallets_of.setdefault(tenant_id, []).extend(wallets)
            session.execute(
                text("INSERT INTO bench_pgbench_client VALUES (:c, :t, :g, :a, :b, :chain, :f)"),
                # The chain the product posts a game's transfers on (`--one-chain-too` sets 0 for a phase).
                {
                    "c": client,
                    "t": tenant_id,
                    "g": game_id,
                    "a": wallets[1],
                    "b": wallets[2],
                    "chain": chain_for(game_id),
                    # The other side of a deposit: the funding sub-account of the chain it posts on.
                    "f": funding_account(session, tenant_id, chain=chain_for(game_id)).id,
                },
            )
        if one_tenant_too:
            alone_chains = session.scalars(
                text("SELECT DISTINCT chain FROM bench_pgbench_client WHERE client_id >= :first"),
                {"first": clients},
            ).all()
            print(f"the one tenant's {clients} games post on {len(alone_chains)} distinct chains", flush=True)
    for tenant_id, wallets in wallets_of.items():
        with teller_on(url, tenant_id, api_keys[tenant_id]) as teller:
            teller.run(_fund(teller, wallets))
    with engine.begin() as connection:
        connection.execute(text("ANALYZE"))
    engine.dispose()


async def _fund(teller: Teller, wallets: list[str]) -> None:
    for wallet in wallets:
        await teller.deposit(wallet, 10**12)


def _pgbench(url: str, script: Path, clients: int, seconds: int, base: int = 0) -> float:
    target = make_url(url)
    command = [
        str(find_bindir() / "pgbench"), "-n", "-M", "prepared", "-c", str(clients), "-j", "2",
        "-T", str(seconds), "-f", str(script), "-D", f"base={base}",
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
    parser.add_argument("--compare", action="store_true", help="one tenant against --clients tenants")
    parser.add_argument(
        "--head-first-too", action="store_true", help="with --compare: also 0011's game_write(), head first"
    )
    parser.add_argument(
        "--one-chain-too",
        action="store_true",
        help="with --compare: also one tenant with every posting on chain 0 (the ledger before 0014)",
    )
    parser.add_argument("--rounds", type=int, default=3, help="with --compare: rounds of phases")
    options = parser.parse_args()
    if options.compare:
        return _compare(
            options.clients,
            options.seconds,
            options.rounds,
            keyed=not options.unkeyed,
            head_first_too=options.head_first_too,
            one_chain_too=options.one_chain_too,
        )
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


def _compare(
    clients: int, seconds: int, rounds: int, *, keyed: bool, head_first_too: bool, one_chain_too: bool
) -> int:
    """One tenant against `clients` tenants, alternating in one database (bench/README.md, "Issue 25").
    `head_first_too`: the action also through 0011's game_write(), which posts before the step's other
    rows (installed here as game_write_head_first), to compare the two in one run. `one_chain_too`: one
    more shape, the one tenant with all its postings on chain 0, as every posting was before 0014."""
    with migrated_cluster() as database, tempfile.TemporaryDirectory(prefix="pokna-pgbench-") as scratch:
        _set_up(database.url, Path(scratch) / "data", clients, clients, one_tenant_too=True)
        workloads = {"action": "game_write", "posting": "", "deposit": ""}
        if head_first_too:
            _install_head_first(database.url)
            workloads = {
                "action": "game_write",
                "head first": "game_write_head_first",
                "posting": "",
                "deposit": "",
            }
        scripts = {}
        for workload, function in workloads.items():
            scripts[workload] = Path(scratch) / f"{workload.replace(' ', '_')}.sql"
            scripts[workload].write_text(
                _script(
                    keyed,
                    False,
                    pipelined=True,
                    posting=not function,
                    deposit=workload == "deposit",
                    function=function or "game_write",
                )
            )
        shapes = {"eight": 0, "one": clients}  # the client rows' base
        if one_chain_too:
            shapes["one chain"] = clients
        for script in scripts.values():  # warm-up
            for shape, base in shapes.items():
                _set_chains(database.url, clients, one_chain=shape == "one chain")
                _pgbench(database.url, script, clients, 2, base)
        rates: dict[tuple[str, str], list[float]] = {}
        for round_number in range(rounds):
            for workload, script in scripts.items():
                for shape, base in shapes.items():
                    _set_chains(database.url, clients, one_chain=shape == "one chain")
                    tps = _pgbench(database.url, script, clients, seconds, base)
                    rates.setdefault((workload, shape), []).append(tps)
                    print(f"round {round_number + 1} {workload:<10} {shape:<6} {tps:>9.1f} tx/s", flush=True)
        _set_chains(database.url, clients, one_chain=False)
        for workload, script in scripts.items():
            tps = _pgbench(database.url, script, clients, seconds, shapes["eight"])
            rates[(workload, "eight")].append(tps)
            print(f"closing  {workload:<10} eight  {tps:>9.1f} tx/s", flush=True)
    print()
    for workload in scripts:
        eight = rates[(workload, "eight")]
        for shape in (name for name in shapes if name != "eight"):
            one = rates[(workload, shape)]
            ratios = [one[i] / ((eight[i] + eight[i + 1]) / 2) for i in range(len(one))]
            label = "one tenant" if shape == "one" else "one tenant, one chain"
            print(
                f"{workload:<10} {label} {sorted(one)[len(one) // 2]:.0f} tx/s, {clients} tenants "
                f"{sorted(eight)[len(eight) // 2]:.0f} tx/s; one / {clients} per phase: "
                f"{', '.join(f'{r:.2f}' for r in ratios)} (median {sorted(ratios)[len(ratios) // 2]:.2f}x)"
            )
    return 0


def _set_chains(url: str, clients: int, *, one_chain: bool) -> None:
    """The one-tenant clients' games post on their own chains (as the product does), or all on chain 0; their
    deposits against the funding sub-account of that chain (on chain 0: the one account of before chains)."""
    engine = make_engine(url)
    with unit_of_work(make_sessionmaker(engine)) as session:
        for client_id, tenant_id, game_id in session.execute(
            text("SELECT client_id, tenant_id, game_id FROM bench_pgbench_client WHERE client_id >= :first"),
            {"first": clients},
        ).all():
            chain = 0 if one_chain else chain_for(game_id)
            session.execute(
                text(
                    "UPDATE bench_pgbench_client SET chain = :chain, funding = :f WHERE client_id = :client"
                ),
                {
                    "chain": chain,
                    "f": funding_account(session, tenant_id, chain=chain).id,
                    "client": client_id,
                },
            )
    engine.dispose()


def _install_head_first(url: str) -> None:
    source = Path(__file__).resolve().parent.parent / "migrations" / "versions" / "0011_distribution_keys.py"
    spec = importlib.util.spec_from_file_location("pokna_migration_0011", source)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    engine = make_engine(url)
    with engine.begin() as connection:
        connection.exec_driver_sql(
            module.GAME_WRITE.replace("FUNCTION game_write(", "FUNCTION game_write_head_first(")
        )
    engine.dispose()


if __name__ == "__main__":
    sys.exit(main())
