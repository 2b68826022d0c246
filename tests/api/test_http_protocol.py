"""What the server layer refuses before the application sees it is problem+json too, on a real `pokna serve`
spoken to over a raw socket (no HTTP client would send these)."""

from __future__ import annotations

import contextlib
import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.databases import PostgresDatabases
from support.servers import running_server

SECRET = "pk_live_in_a_broken_header_5ca1ab1e"
UNPARSABLE = {
    "content-length not a number": b"POST /v1/accounts HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n{}",
    "negative content-length": b"POST /v1/accounts HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
    "two different content-lengths": (
        b"POST /v1/accounts HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}"
    ),
    "header line without a colon": (
        b"GET /v1/accounts/acct_x HTTP/1.1\r\nHost: x\r\nAuthorization Bearer "
        + SECRET.encode()
        + b"\r\n\r\n"
    ),
    "space before the colon": b"GET /healthz HTTP/1.1\r\nHost : x\r\n\r\n",
    "not http at all": b"HELLO THERE\r\n\r\n",
    "http/1.1 without host": b"GET /healthz HTTP/1.1\r\n\r\n",
    "a header block over 16 KiB": b"GET /healthz HTTP/1.1\r\nHost: x\r\n"
    + b"X-Pad: "
    + b"a" * 17_000
    + b"\r\n\r\n",
    "a url over 16 KiB": b"GET /healthz?pad=" + b"a" * 17_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
}


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, postgres_databases: PostgresDatabases
) -> Iterator[tuple[str, int, Path]]:
    data_dir = tmp_path_factory.mktemp("raw") / "data"
    with running_server({"POKNA_DATABASE_URL": postgres_databases.migrated()}, data_dir) as base:
        port = int(base.rsplit(":", 1)[1])
        yield "127.0.0.1", port, data_dir.parent / f"serve-{port}.log"


def _exchange(host: str, port: int, request: bytes) -> bytes:
    with socket.create_connection((host, port), timeout=10) as connection:
        # The server may answer and close before the whole header block is sent.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            connection.sendall(request)
        received = b""
        while chunk := connection.recv(65536):
            received += chunk
    return received


def _parse(raw: bytes) -> tuple[int, dict[str, str], bytes]:
    head, _, body = raw.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(status_line.split()[1]), headers, body


@pytest.mark.parametrize("label", sorted(UNPARSABLE))
def test_an_unparsable_request_gets_a_problem_document(server: tuple[str, int, Path], label: str) -> None:
    host, port, _ = server
    status, headers, body = _parse(_exchange(host, port, UNPARSABLE[label]))
    assert status == 400
    assert headers["content-type"] == "application/problem+json"
    assert int(headers["content-length"]) == len(body)
    problem = json.loads(body)
    assert (problem["status"], problem["code"]) == (400, "bad_request")
    assert problem["type"] == "https://pokna.dev/problems/bad_request"
    assert problem["request_id"] == headers["x-request-id"]


def test_the_server_still_serves_and_logs_no_header_it_refused(server: tuple[str, int, Path]) -> None:
    host, port, log_path = server
    _exchange(host, port, UNPARSABLE["header line without a colon"])
    status, _, body = _parse(
        _exchange(host, port, b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    )
    assert (status, json.loads(body)) == (200, {"status": "ok"})
    assert SECRET not in log_path.read_text()


def test_a_long_head_within_the_limit_is_served(server: tuple[str, int, Path]) -> None:
    host, port, _ = server
    request = (
        b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Pad: " + b"a" * 12_000 + b"\r\n\r\n"
    )
    status, _, body = _parse(_exchange(host, port, request))
    assert (status, json.loads(body)) == (200, {"status": "ok"})
