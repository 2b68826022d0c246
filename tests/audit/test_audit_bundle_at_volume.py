"""An audit bundle the size a real tenant reaches, from a real `pokna serve` and from the CLI.

A bundle past every internal batch (the JSONL export's page, the writer's batch) once hung after its first
two records: the writer read accounts and games through the session while the export still streamed on
the same connection (psycopg holds the connection's lock until a stream ends). These tests make books
larger than every batch, with games on both sides of the boundaries, and check that the bundle ends and
verifies with `pokna audit verify --keys`; that a client which stalls or hangs up holds no database
connection, so others are served; and that SIGTERM ends a server whose clients stall.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from psycopg import AsyncConnection
from sqlalchemy import create_engine, text

from pokna.bundles.writer import BATCH_TRANSACTIONS
from pokna.ledger.reads import AccountRecord
from pokna.ledger.store_postgresql import PAGE_TRANSACTIONS
from pokna_verify.bundle.scan import verify_bundle_stream
from support.driver import open_account_on
from support.fault_servers import service_env, tenant_on
from support.game_play import Api, obliging, play
from support.money import Teller, teller_on
from support.servers import Server, serving

# Each test its own mark (not the module's): the Citus run of the first goes to the cluster's worker instead.
VOLUME = pytest.mark.xdist_group("bundle-volume")

DEPOSITS = max(PAGE_TRANSACTIONS, BATCH_TRANSACTIONS) + 150
SPREAD_WALLETS = 24
SPREAD_DEPOSITS = 600
CLIENTS = 4
POKNA = str(Path(sys.executable).with_name("pokna"))


@dataclass
class Books:
    server: Server
    env: dict[str, str]
    tenant_id: str
    api: Api
    transactions: int
    games: list[str]


def _play_games(api: Api, wallets: list[str], count: int) -> list[str]:
    game_ids = []
    for index in range(count):
        vigo, *players = wallets[index % 2 :] + wallets[: index % 2]
        game = api.create_game(vigo, players[:2], stake=5)
        game_ids.append(play([api], game, obliging)["id"])
    return game_ids


async def _wallet(connection: AsyncConnection[Any], tenant_id: str, external_id: str) -> AccountRecord:
    return await open_account_on(
        connection, tenant_id=tenant_id, kind="player_wallet", external_id=external_id
    )


async def _deposits(teller: Teller) -> None:
    """DEPOSITS to one new wallet, then SPREAD_DEPOSITS over SPREAD_WALLETS more, through the service function
    the deposit route calls, a few clients at once."""
    async with teller.database.connection() as connection, connection.transaction():
        wallet = (await _wallet(connection, teller.tenant_id, "volume")).id
        spread = [
            (await _wallet(connection, teller.tenant_id, f"s{index}")).id for index in range(SPREAD_WALLETS)
        ]

    async def client(
        first: int, moves: int, deposit: Callable[[int, AsyncConnection[Any]], Awaitable[object]]
    ) -> None:
        async with teller.database.connection() as connection:
            for index in range(first, moves, CLIENTS):
                await deposit(index, connection)

    async def volume(index: int, connection: AsyncConnection[Any]) -> object:
        return await teller.deposit(wallet, 1, reference=f"d{index}", connection=connection)

    async def spread_out(index: int, connection: AsyncConnection[Any]) -> object:
        return await teller.deposit(spread[index % SPREAD_WALLETS], 1, connection=connection)

    await asyncio.gather(*(client(first, DEPOSITS, volume) for first in range(CLIENTS)))
    await asyncio.gather(*(client(first, SPREAD_DEPOSITS, spread_out) for first in range(CLIENTS)))


@pytest.fixture
def books(database_url: str, tmp_path: Path) -> Iterator[Books]:
    """Games, then more deposits than any batch holds (on one wallet's chain: past a page of the export
    within one chain) and deposits to many more wallets (spread over the other chains), then games again
    and a checkpoint, on a real server."""
    env = {
        **service_env(database_url),
        "POKNA_RATE_LIMIT_PER_SECOND": "0",
        "POKNA_SHUTDOWN_TIMEOUT_SECONDS": "3",
    }
    tenant_id, api_key = tenant_on(database_url)
    with (
        serving(env, tmp_path / "serve" / "data") as server,
        httpx.Client(base_url=server.base, timeout=30) as http,
    ):
        api = Api(http, api_key)
        wallets = [api.wallet(10_000) for _ in range(4)]
        game_ids = _play_games(api, wallets, 2)
        with teller_on(database_url, tenant_id, api_key) as teller:
            teller.run(_deposits(teller))
        game_ids += _play_games(api, wallets, 2)
        api.ok(api.post("/v1/ledger/checkpoints", idempotency_key="volume-checkpoint"), 201)
        engine = create_engine(database_url)
        try:
            with engine.connect() as connection:
                transactions, chains = connection.execute(
                    text(
                        "SELECT count(*), count(DISTINCT chain) FROM journal_transaction WHERE tenant_id = :t"
                    ),
                    {"t": tenant_id},
                ).one()
        finally:
            engine.dispose()
        assert chains > 8  # the books are spread over several chains
        yield Books(server, env, tenant_id, api, transactions, game_ids)


def _verified(bundle: Path, keys: Path) -> dict[str, object]:
    answer = subprocess.run(
        [POKNA, "audit", "verify", str(bundle), "--keys", str(keys), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert answer.returncode == 0, answer.stdout + answer.stderr
    report: dict[str, object] = json.loads(answer.stdout)
    assert report["verdict"] == "valid", report
    return report


def _kinds(bundle: Path) -> list[str]:
    with bundle.open() as lines:
        return [json.loads(line)["type"] for line in lines]


@VOLUME
@pytest.mark.citus
def test_a_bundle_past_every_batch_streams_to_the_end_and_verifies(books: Books, tmp_path: Path) -> None:
    assert books.transactions > DEPOSITS > max(PAGE_TRANSACTIONS, BATCH_TRANSACTIONS)
    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps(books.api.key_ring().to_json()))

    over_http = tmp_path / "http.jsonl"
    with (
        httpx.Client(base_url=books.server.base, timeout=60) as http,
        http.stream("GET", "/v1/audit/bundle", headers=books.api.headers) as response,
        over_http.open("wb") as out,
    ):
        assert response.status_code == 200
        for block in response.iter_bytes():
            out.write(block)
    kinds = _kinds(over_http)
    assert kinds[0] == "pokna.audit.bundle"
    assert kinds[-1] == "end"
    assert kinds.count("transaction") == books.transactions
    assert kinds.count("game") == len(books.games)
    report = _verified(over_http, keys)
    assert report["transactions"] == books.transactions

    from_cli = tmp_path / "cli.jsonl"
    written = subprocess.run(
        [POKNA, "audit", "bundle", "--tenant", books.tenant_id, "-o", str(from_cli)],
        env={**os.environ, **books.env, "POKNA_DATA_DIR": str(tmp_path / "cli-data")},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert written.returncode == 0, written.stderr
    assert _kinds(from_cli) == kinds
    _verified(from_cli, keys)
    # The same books either way: every record after the header (which carries its own time) is equal.
    assert over_http.read_text().splitlines()[1:] == from_cli.read_text().splitlines()[1:]

    # Every chain in (chain, seq) order, each named with its range in the signed header.
    documents = [json.loads(line) for line in over_http.read_text().splitlines()]
    positions = [(d["chain"], d["seq"]) for d in documents if d["type"] == "transaction"]
    assert positions == sorted(positions)
    chains = {chain for chain, _seq in positions}
    assert len(chains) > 4
    assert [entry["chain"] for entry in documents[0]["chains"]] == sorted(chains)
    assert report["chains"] == documents[0]["chains"]

    # A tamper on a chain other than 0 is found and named by its chain and seq, on two processes too.
    victim = next(
        d for d in documents if d["type"] == "transaction" and d["chain"] != 0 and d["kind"] == "deposit"
    )
    for posting in victim["postings"]:
        posting["amount"] += 1 if posting["amount"] > 0 else -1
    tampered = tmp_path / "tampered.jsonl"
    tampered.write_text("".join(json.dumps(d, separators=(",", ":")) + "\n" for d in documents))
    name = f"chain {victim['chain']} seq {victim['seq']}"
    for processes in (1, 2):
        with tampered.open("rb") as stream:
            found = verify_bundle_stream(stream, keys=books.api.key_ring(), processes=processes)
        assert any(
            finding.record_id == name and "hash does not match its contents" in finding.problem
            for finding in found.findings
        ), found.to_json()


def _stalled_bundle(base: str, api_key: str) -> socket.socket:
    """A client that asks for the bundle, reads the first bytes of the answer, then reads nothing more."""
    address = urlsplit(base)
    client = socket.socket()
    client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # a small window: the server must wait
    client.connect((address.hostname, address.port))
    client.sendall(
        f"GET /v1/audit/bundle HTTP/1.1\r\nHost: {address.netloc}\r\nAuthorization: Bearer {api_key}\r\n\r\n".encode()
    )
    assert client.recv(64).startswith(b"HTTP/1.1 200")
    return client


def _settled_backends_in_transaction(database_url: str) -> list[str]:
    """The other sessions on the service's database that still hold a transaction open once the server has
    had up to 15 s to write what the sockets take (20 bundles' first batches on two cores)."""
    deadline = time.monotonic() + 15
    while (holding := _backends_in_transaction(database_url)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return holding


def _backends_in_transaction(database_url: str) -> list[str]:
    engine = create_engine(database_url)
    try:
        with engine.connect() as connection:
            return list(
                connection.execute(
                    text(
                        "SELECT state || ': ' || query FROM pg_stat_activity WHERE datname = current_database() "
                        "AND pid <> pg_backend_pid() AND xact_start IS NOT NULL"
                    )
                ).scalars()
            )
    finally:
        engine.dispose()


@VOLUME
def test_stalled_and_departed_clients_hold_no_connection(books: Books, database_url: str) -> None:
    """More stalled bundle readers than the pool has connections: the others are still served at once."""
    with ExitStack() as stack:
        stalled = [
            stack.enter_context(closing(_stalled_bundle(books.server.base, books.api.api_key)))
            for _ in range(20)
        ]
        assert _settled_backends_in_transaction(database_url) == []
        started = time.monotonic()
        with ThreadPoolExecutor(8) as pool:
            answers = list(
                pool.map(lambda _: books.api.get("/v1/ledger/trial-balance").status_code, range(16))
            )
        assert answers == [200] * 16
        assert time.monotonic() - started < 5
        ready = httpx.get(f"{books.server.base}/readyz", timeout=10)
        assert ready.status_code == 200, ready.text
        for client in stalled[:10]:  # hang up without reading on
            client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # a reset
    assert _settled_backends_in_transaction(database_url) == []
    assert books.api.get("/v1/ledger/trial-balance").status_code == 200


@VOLUME
def test_sigterm_ends_a_server_whose_clients_stall(books: Books) -> None:
    with ExitStack() as stack:
        for _ in range(3):
            stack.enter_context(closing(_stalled_bundle(books.server.base, books.api.api_key)))
        started = time.monotonic()
        books.server.process.send_signal(signal.SIGTERM)
        books.server.process.wait(timeout=30)
        # POKNA_SHUTDOWN_TIMEOUT_SECONDS=3: the stalled requests are cancelled after it, not waited on.
        assert time.monotonic() - started < 15
