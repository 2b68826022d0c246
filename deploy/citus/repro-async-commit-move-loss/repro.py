"""Move shards while two clients insert rows, then count the acknowledged rows that are gone (README.md).

    python repro.py "postgresql://postgres@coordinator:5432/repro" [--mode force_logical] [--moves 8]
        [--rate 20] [--synchronous-commit off]

Needs only psycopg 3. Runs setup.sql, starts one client per table (a row every 1/rate s, each an
autocommit `INSERT ... RETURNING`, recorded in `repro_ack` once answered), moves `--moves` shard groups one
after the other to another worker, stops the clients and prints check.sql's answer:
`acknowledged=N lost=M`. Exits 1 when rows were lost.

`--synchronous-commit on|off` sets the setting for this database (`ALTER DATABASE ... SET`, which Citus
propagates to the workers) for the run and resets it afterwards; left out, the servers' own setting holds.
"""

from __future__ import annotations

import argparse
import itertools
import random
import sys
import threading
import time
from pathlib import Path

import psycopg
from psycopg import sql

HERE = Path(__file__).resolve().parent
_ids = itertools.count(1)
_ids_lock = threading.Lock()


def _next_id() -> int:
    with _ids_lock:
        return next(_ids)


def client(dsn: str, table: str, rate: float, stop: threading.Event, errors: list[str]) -> None:
    """Insert rows until told to stop; record each row only after the server answered it."""
    with psycopg.connect(dsn, autocommit=True) as connection:
        while not stop.is_set():
            k, row_id = random.randrange(1000), _next_id()  # noqa: S311 (a spread of keys, not a secret)
            try:
                connection.execute(
                    f"INSERT INTO {table} (k, id, note) VALUES (%s, %s, 'x') RETURNING id",  # noqa: S608
                    (k, row_id),
                ).fetchone()
            except psycopg.Error as error:  # not acknowledged: not recorded
                errors.append(f"{table}: {error.sqlstate} {str(error).splitlines()[0]}")
                continue
            connection.execute(
                "INSERT INTO repro_ack (kind, k, id) VALUES (%s, %s, %s)", (table[-1], k, row_id)
            )
            time.sleep(1 / rate)


def move_shards(dsn: str, mode: str, moves: int) -> None:
    """Move the shard groups of repro_a, one at a time, each to another worker than the one holding it."""
    with psycopg.connect(dsn, autocommit=True) as connection:
        workers = connection.execute(
            "SELECT nodename, nodeport FROM pg_dist_node "
            "WHERE isactive AND noderole = 'primary' AND shouldhaveshards ORDER BY nodeid"
        ).fetchall()
        if len(workers) < 2:
            raise SystemExit("needs at least two workers that hold shards")
        shards = connection.execute(
            "SELECT shardid FROM pg_dist_shard WHERE logicalrelid = 'repro_a'::regclass ORDER BY shardid"
        ).fetchall()
        for (shard,) in shards[:moves]:
            time.sleep(0.5)  # writes before the move
            source = connection.execute(
                "SELECT nodename, nodeport FROM citus_shards WHERE shardid = %s", (shard,)
            ).fetchone()
            assert source is not None
            target = next(worker for worker in workers if tuple(worker) != tuple(source))
            connection.execute(
                "SELECT citus_move_shard_placement(%s, %s, %s, %s, %s, "
                "shard_transfer_mode => CAST(%s AS citus.shard_transfer_mode))",
                (shard, *source, *target, mode),
            )
            print(f"moved shard {shard} {source[0]}:{source[1]} -> {target[0]}:{target[1]} ({mode})")


def run_sql(dsn: str, name: str) -> list[tuple[object, ...]]:
    with psycopg.connect(dsn, autocommit=True) as connection:
        cursor = connection.execute((HERE / name).read_text())
        return cursor.fetchall() if cursor.description else []


def set_synchronous_commit(dsn: str, value: str | None) -> None:
    with psycopg.connect(dsn, autocommit=True) as connection:
        name = connection.execute("SELECT current_database()").fetchone()
        assert name is not None
        database = sql.Identifier(name[0])
        if value is None:
            connection.execute(sql.SQL("ALTER DATABASE {} RESET synchronous_commit").format(database))
        else:
            setting = sql.SQL("ALTER DATABASE {} SET synchronous_commit = {}")
            connection.execute(setting.format(database, sql.Literal(value)))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("dsn", help="libpq URL of the coordinator's database")
    parser.add_argument("--mode", default="force_logical", help="shard_transfer_mode (default force_logical)")
    parser.add_argument("--moves", type=int, default=8, help="shard groups to move (at most 8)")
    parser.add_argument("--rate", type=float, default=20, help="rows per second per client")
    parser.add_argument("--synchronous-commit", choices=("on", "off"), help="for this database, this run")
    args = parser.parse_args()

    run_sql(args.dsn, "setup.sql")
    if args.synchronous_commit is not None:
        set_synchronous_commit(args.dsn, args.synchronous_commit)
    stop = threading.Event()
    errors: list[str] = []
    clients = [
        threading.Thread(target=client, args=(args.dsn, table, args.rate, stop, errors))
        for table in ("repro_a", "repro_b")
    ]
    try:
        for thread in clients:
            thread.start()
        move_shards(args.dsn, args.mode, args.moves)
        time.sleep(0.5)  # writes after the last move
    finally:
        stop.set()
        for thread in clients:
            thread.join()
        if args.synchronous_commit is not None:
            set_synchronous_commit(args.dsn, None)
    for error in sorted(set(errors)):
        print(f"refused (not acknowledged): {error}")
    ((acknowledged, lost),) = run_sql(args.dsn, "check.sql")
    print(f"acknowledged={acknowledged} lost={lost}")
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main())
