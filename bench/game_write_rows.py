"""How a delegated function inserts a few rows, measured on a Citus worker and on one PostgreSQL (issue 45).

`game_write()` inserts each game event, roll and outbox row with its own `INSERT ... VALUES`, the tenant a
parameter. On a Citus worker each such statement names a distributed table, so Citus plans it, prunes to
the shard, deparses the shard query and parses and plans that again for local execution (bench/README.md,
"Issue 45: a worker's time inside a delegated function"). Compared here, for N = 1..5 game events a call,
each form a bench-only PL/pgSQL function reading the events from a JSON array as game_write() does:

    values     N x `INSERT ... VALUES (...)`, the tenant a parameter (game_write() as it is)
    literal    N x `EXECUTE format('INSERT ... VALUES (%L, ...)')`, the tenant a literal
    multirow   one `EXECUTE 'INSERT ... VALUES (...), (...), ...'`, every value through %L
    arrays     the same, the tenant and game through %L, the rest `$1[i]`... of arrays passed by USING
    static     one static `INSERT ... VALUES` of N rows, the tenant a parameter (a statement for each N)
    recordset  one `INSERT ... SELECT ... FROM json_populate_recordset(...)` (Citus's pull-and-COPY path)

On Citus one connection goes straight to the worker holding the tenant's shard (`citus`), then one to the
coordinator, which delegates each call to that worker as it does game_write() (`delegated`: the CPU of
every client backend on the worker but the one reading the counters); on PostgreSQL (the same binaries)
to the server. Each connection is in autocommit; within a round and an N the forms run one after the
other, and the CPU (/proc/<pid>/schedstat) over `--calls` calls of one form is divided by the calls. Then each form is called 20 times through the coordinator,
delegated like game_write() and each call in its own transaction, and the rows pg_dist_transaction gained
on all nodes are counted (a two-phase commit leaves one a participant on the node that coordinated it).
Each form is first checked to store its rows as sent: a payload's text byte for byte (quotes, backslashes,
`$$`, `%L`, escaped non-ASCII) and a hostile kind, the instants exactly under another TimeZone and DateStyle.

    cd bench && ../.venv/bin/python game_write_rows.py [--rounds 4] [--calls 300]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
from games_support import BENCH  # noqa: F401  (puts tests/ on sys.path)

from pokna.db import migrate
from pokna.db.backend import conninfo_of
from pokna.db.engine import make_engine
from pokna.dealer import service as dealer
from pokna.service_keys import load_service_keys
from pokna.settings import Settings
from support.citus import citus_bindir, start_citus  # type: ignore[import-not-found,unused-ignore]
from support.driver import create_tenant, open_account  # type: ignore[import-not-found,unused-ignore]
from support.postgres import start_cluster  # type: ignore[import-not-found,unused-ignore]
from support.sessions import make_sessionmaker, unit_of_work  # type: ignore[import-not-found,unused-ignore]

COLUMNS = "game_event (tenant_id, game_id, seq, kind, payload, occurred_at)"
FORMS = {
    "values": f"""
        FOR i IN 0 .. json_array_length(p_events) - 1 LOOP
            v_event := json_populate_record(NULL::game_event, p_events->i);
            INSERT INTO {COLUMNS}
            VALUES (p_tenant_id, p_game_id, v_event.seq, v_event.kind, v_event.payload, v_event.occurred_at);
        END LOOP;""",
    "literal": f"""
        FOR i IN 0 .. json_array_length(p_events) - 1 LOOP
            v_event := json_populate_record(NULL::game_event, p_events->i);
            EXECUTE format('INSERT INTO {COLUMNS} VALUES (%L, %L, %L::int, %L, %L::json, %L::timestamptz)',
                p_tenant_id, p_game_id, v_event.seq, v_event.kind, v_event.payload,
                to_json(v_event.occurred_at)#>>'{{}}');
        END LOOP;""",
    "multirow": f"""
        FOR i IN 0 .. json_array_length(p_events) - 1 LOOP
            v_event := json_populate_record(NULL::game_event, p_events->i);
            v_values := v_values || format('(%L, %L, %L::int, %L, %L::json, %L::timestamptz)',
                p_tenant_id, p_game_id, v_event.seq, v_event.kind, v_event.payload,
                to_json(v_event.occurred_at)#>>'{{}}');
        END LOOP;
        EXECUTE 'INSERT INTO {COLUMNS} VALUES ' || array_to_string(v_values, ', ');""",
    "arrays": f"""
        v_head := format('(%L, %L, ', p_tenant_id, p_game_id);
        FOR i IN 1 .. json_array_length(p_events) LOOP
            v_event := json_populate_record(NULL::game_event, p_events->(i - 1));
            v_seqs[i] := v_event.seq;
            v_kinds[i] := v_event.kind;
            v_payloads[i] := v_event.payload;
            v_times[i] := v_event.occurred_at;
            v_values[i] := v_head || '$1[' || i || '], $2[' || i || '], $3[' || i || '], $4[' || i || '])';
        END LOOP;
        EXECUTE 'INSERT INTO {COLUMNS} VALUES ' || array_to_string(v_values, ', ')
            USING v_seqs, v_kinds, v_payloads, v_times;""",
    "static": """
        FOR i IN 1 .. json_array_length(p_events) LOOP
            v_events[i] := json_populate_record(NULL::game_event, p_events->(i - 1));
        END LOOP;
        CASE json_array_length(p_events)"""
    + "".join(
        f"""
        WHEN {n} THEN INSERT INTO {COLUMNS} VALUES """
        + ", ".join(
            f"(p_tenant_id, p_game_id, (v_events[{i}]).seq, (v_events[{i}]).kind, (v_events[{i}]).payload, "
            f"(v_events[{i}]).occurred_at)"
            for i in range(1, n + 1)
        )
        + ";"
        for n in range(1, 6)
    )
    + """
        END CASE;""",
    "recordset": f"""
        INSERT INTO {COLUMNS}
        SELECT p_tenant_id, p_game_id, event.seq, event.kind, event.payload, event.occurred_at
        FROM json_populate_recordset(NULL::game_event, p_events) AS event;""",
}


def function(form: str) -> str:
    return f"""
CREATE OR REPLACE FUNCTION bench_rows_{form}(p_tenant_id text, p_game_id text, p_events json)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_event game_event;
    v_values text[] := '{{}}';
    v_head text;
    v_seqs int[];
    v_kinds text[];
    v_payloads json[];
    v_times timestamptz[];
    v_events game_event[];
BEGIN{FORMS[form]}
END
$$"""


def events(first_seq: int, count: int) -> str:
    """Game events shaped like a step's (a roll's payload, about 200 bytes)."""
    now = datetime.now(UTC)
    return json.dumps(
        [
            {
                "seq": first_seq + n,
                "kind": "dice_rolled",
                "payload": {
                    "seat": 1,
                    "purpose": "move",
                    "face": 4,
                    "color": "red",
                    "nonce": first_seq + n,
                    "server_seed_hash": "9f" * 32,
                    "note": "a step's event",
                },
                "occurred_at": (now + timedelta(microseconds=n)).isoformat(),
            }
            for n in range(count)
        ],
        separators=(",", ":"),
    )


@contextmanager
def servers() -> Iterator[dict[str, tuple[str, str | None]]]:
    """Each server's database URL and, on Citus, the coordinator's too (for delegated calls)."""
    with ExitStack() as stack:
        plain = start_cluster(bindir=citus_bindir())
        stack.callback(plain.stop)
        citus = start_citus()
        stack.callback(citus.stop)
        coordinator = citus.new_database("pokna_bench")
        migrate.upgrade(plain.url)
        migrate.upgrade(coordinator)
        yield {"postgres": (plain.url, None), "citus": (coordinator, coordinator)}


def a_game(url: str, scratch: Path) -> tuple[str, str]:
    engine = make_engine(url)
    tenant_id = create_tenant(engine, "bench").id

    with unit_of_work(make_sessionmaker(engine)) as session:
        wallets = [open_account(session, tenant_id=tenant_id, kind="player_wallet").id for _ in range(2)]
    engine.dispose()
    keys = load_service_keys(Settings(data_dir=scratch))
    clock = dealer.Clock(now=datetime.now(UTC), open_game_ttl=timedelta(days=30))

    async def create() -> str:
        connection = await psycopg.AsyncConnection.connect(conninfo_of(url), autocommit=True)
        try:
            terms = dealer.NewGame(wallets[0], wallets[1:], stake=5)
            created = await dealer.create_game(
                connection, keys, clock, dealer.Caller(tenant_id=tenant_id), None, terms
            )
            return str(json.loads(created.body)["id"])
        finally:
            await connection.close()

    return tenant_id, asyncio.run(create())


def install(url: str, coordinator: str | None) -> None:
    with psycopg.connect(conninfo_of(url), autocommit=True) as connection:
        for form in FORMS:
            connection.execute(function(form).encode())
            if coordinator is not None:
                connection.execute(
                    f"SELECT create_distributed_function('bench_rows_{form}(text, text, json)', "
                    "'p_tenant_id', colocate_with => 'journal_transaction', force_delegation => true)".encode()
                )
                # As every delegated function on Citus (pokna.db.distribution.WORKER_FUNCTION_SETTINGS).
                connection.execute(
                    f"ALTER FUNCTION bench_rows_{form}(text, text, json) SET plan_cache_mode = force_custom_plan".encode()
                )


def shard_node(coordinator: str, tenant_id: str) -> str:
    """The URL of the worker database holding the tenant's game_event shard."""
    with psycopg.connect(conninfo_of(coordinator), autocommit=True) as connection:
        row = connection.execute(
            "SELECT n.nodename, n.nodeport FROM pg_dist_placement p JOIN pg_dist_node n USING (groupid) "
            "WHERE p.shardid = get_shard_id_for_distribution_column('game_event', %s::text)",
            (tenant_id,),
        ).fetchone()
    assert row is not None
    info = psycopg.conninfo.conninfo_to_dict(conninfo_of(coordinator))
    info.update(host=row[0], port=row[1])
    return psycopg.conninfo.make_conninfo(**{k: str(v) for k, v in info.items() if v is not None})


def cpu_ns(pid: int) -> int:
    """The backend's time on a CPU: /proc/<pid>/schedstat's first field, in nanoseconds (/proc/<pid>/stat's
    utime and stime count 10 ms ticks, too coarse for calls of a tenth of a millisecond)."""
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])


def measure(
    caller: str, worker: str | None, tenant_id: str, game_id: str, rounds: int, calls: int
) -> dict[str, dict[int, list[float]]]:
    """CPU a call of each form and N: of the caller's backend, or with `worker` (the caller then a Citus
    coordinator, which delegates each call) of every other client backend on that worker."""
    found: dict[str, dict[int, list[float]]] = {form: {n: [] for n in range(1, 6)} for form in FORMS}
    seq = 1000 if worker is None else 1_000_000
    with ExitStack() as stack:
        connection = stack.enter_context(psycopg.connect(caller, autocommit=True))
        monitor = None if worker is None else stack.enter_context(psycopg.connect(worker, autocommit=True))

        def backends() -> list[int]:
            if monitor is None:
                return [connection.info.backend_pid]
            rows = monitor.execute(
                "SELECT pid FROM pg_stat_activity WHERE backend_type = 'client backend' "
                "AND datname = current_database() AND pid <> pg_backend_pid()"
            ).fetchall()
            return [row[0] for row in rows]

        for _ in range(rounds):
            for n in range(1, 6):
                for form in FORMS:
                    statement = f"SELECT bench_rows_{form}(%s, %s, %s::json)".encode()
                    for _ in range(10):  # plans made, caches warm
                        connection.execute(statement, (tenant_id, game_id, events(seq, n)))
                        seq += n
                    documents = []
                    for _ in range(calls):
                        documents.append(events(seq, n))
                        seq += n
                    pids = backends()
                    before = sum(cpu_ns(pid) for pid in pids)
                    for document in documents:
                        connection.execute(statement, (tenant_id, game_id, document))
                    found[form][n].append((sum(cpu_ns(pid) for pid in pids) - before) / 1e6 / calls)
    return found


def stored_as_sent(url: str, tenant_id: str, game_id: str) -> None:
    """Each form stores the events' payload text byte for byte and their instants exactly, the session on a
    far time zone and another date style (a literal of a timestamptz must not depend on them)."""
    seq = 20_000_000
    with psycopg.connect(conninfo_of(url), autocommit=True) as connection:
        connection.execute("SET TimeZone = 'Pacific/Chatham'")
        connection.execute("SET DateStyle = 'SQL, DMY'")
        for form in FORMS:
            document = (
                events(seq, 3)
                .replace("a step's event", r"it's \\\\ $$ \u00e9\u20ac \"q\" %L")
                .replace('"dice_rolled"', r'"d\u0027); DROP t; --"')
            )
            connection.execute(
                f"SELECT bench_rows_{form}(%s, %s, %s::json)".encode(), (tenant_id, game_id, document)
            )
            stored = connection.execute(
                "SELECT kind, payload::text, extract(epoch FROM occurred_at)::numeric FROM game_event "
                "WHERE tenant_id = %s AND game_id = %s AND seq >= %s AND seq < %s ORDER BY seq",
                (tenant_id, game_id, seq, seq + 3),
            ).fetchall()
            sent = [
                (
                    event["kind"],
                    json.dumps(event["payload"], separators=(",", ":")),
                    datetime.fromisoformat(event["occurred_at"]).timestamp(),
                )
                for event in json.loads(document)
            ]
            if [(k, p, float(t)) for k, p, t in stored] != sent:
                raise RuntimeError(f"{form} stored {stored}, not {sent}")
            seq += 3


def two_phase(coordinator: str, tenant_id: str, game_id: str) -> dict[str, int]:
    """The rows pg_dist_transaction gains, on all nodes, over 20 delegated calls of each form, each in a
    transaction (a two-phase commit leaves a row on the node that coordinated it for each participant)."""
    gained: dict[str, int] = {}
    seq = 10_000_000
    with psycopg.connect(conninfo_of(coordinator), autocommit=True) as connection:
        for form in FORMS:
            count = (
                "SELECT sum(result::int) FROM run_command_on_all_nodes("
                "'SELECT count(*) FROM pg_dist_transaction')"
            )
            before = connection.execute(count).fetchone()[0]  # type: ignore[index]
            for _ in range(20):
                seq += 3
                with connection.transaction():
                    connection.execute(
                        f"SELECT bench_rows_{form}(%s, %s, %s::json)".encode(),
                        (tenant_id, game_id, events(seq, 3)),
                    )
            gained[form] = connection.execute(count).fetchone()[0] - before  # type: ignore[index]
        # The control: the recordset's statement sent to the coordinator itself, not delegated (docs/scaling.md:
        # a COPY into a shard commits in two phases).
        before = connection.execute(count).fetchone()[0]  # type: ignore[index]
        for _ in range(20):
            seq += 3
            with connection.transaction():
                connection.execute(
                    f"INSERT INTO {COLUMNS} SELECT %s, %s, event.seq, event.kind, event.payload, "
                    "event.occurred_at FROM json_populate_recordset(NULL::game_event, %s::json) AS event".encode(),
                    (tenant_id, game_id, events(seq, 3)),
                )
        gained["recordset sent to the coordinator"] = connection.execute(count).fetchone()[0] - before  # type: ignore[index]
    return gained


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--calls", type=int, default=300)
    args = parser.parse_args()
    with servers() as urls, tempfile.TemporaryDirectory(prefix="pokna-rows-") as scratch:
        for server, (url, coordinator) in urls.items():
            tenant_id, game_id = a_game(url, Path(scratch) / server)
            install(url, coordinator)
            target = conninfo_of(url) if coordinator is None else shard_node(coordinator, tenant_id)
            runs = {server: measure(target, None, tenant_id, game_id, args.rounds, args.calls)}
            if coordinator is not None:
                runs["delegated"] = measure(
                    conninfo_of(coordinator), target, tenant_id, game_id, args.rounds, args.calls
                )
            for where, found in runs.items():
                for form, by_n in found.items():
                    cells = "  ".join(
                        f"N={n}: {statistics.median(v):5.3f} ({', '.join(f'{x:.3f}' for x in v)})"
                        for n, v in by_n.items()
                    )
                    print(f"{where:9}  {form:9}  ms CPU a call  {cells}", flush=True)
            stored_as_sent(url, tenant_id, game_id)
            print(f"{server:9}  every form stored the events as sent", flush=True)
            if coordinator is not None:
                print(
                    f"{server:8}  pg_dist_transaction rows over 20 delegated calls: "
                    f"{two_phase(coordinator, tenant_id, game_id)}",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
