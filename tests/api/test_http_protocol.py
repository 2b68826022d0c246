"""What the server layer refuses before the application sees it is problem+json too, on a real `pokna serve`
spoken to over a raw socket (no HTTP client would send these)."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from support.databases import PostgresDatabases
from support.servers import serving

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


HEAD_TIMEOUT_SECONDS = 2
BODY_TIMEOUT_SECONDS = 2


@dataclass
class RawServer:
    host: str
    port: int
    log_path: Path
    pid: int


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, postgres_databases: PostgresDatabases
) -> Iterator[RawServer]:
    data_dir = tmp_path_factory.mktemp("raw") / "data"
    env = {
        "POKNA_DATABASE_URL": postgres_databases.migrated(),
        "POKNA_REQUEST_HEAD_TIMEOUT_SECONDS": str(HEAD_TIMEOUT_SECONDS),
        "POKNA_REQUEST_BODY_TIMEOUT_SECONDS": str(BODY_TIMEOUT_SECONDS),
    }
    with serving(env, data_dir) as running:
        port = int(running.base.rsplit(":", 1)[1])
        yield RawServer("127.0.0.1", port, running.log_path, running.process.pid)


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
def test_an_unparsable_request_gets_a_problem_document(server: RawServer, label: str) -> None:
    host, port = server.host, server.port
    status, headers, body = _parse(_exchange(host, port, UNPARSABLE[label]))
    assert status == 400
    assert headers["content-type"] == "application/problem+json"
    assert headers["x-content-type-options"] == "nosniff"
    assert int(headers["content-length"]) == len(body)
    problem = json.loads(body)
    assert (problem["status"], problem["code"]) == (400, "bad_request")
    assert problem["type"] == "https://pokna.dev/problems/bad_request"
    assert problem["request_id"] == headers["x-request-id"]


def test_the_server_still_serves_and_logs_no_header_it_refused(server: RawServer) -> None:
    host, port, log_path = server.host, server.port, server.log_path
    _exchange(host, port, UNPARSABLE["header line without a colon"])
    status, _, body = _parse(
        _exchange(host, port, b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    )
    assert (status, json.loads(body)) == (200, {"status": "ok"})
    assert SECRET not in log_path.read_text()


def test_a_long_head_within_the_limit_is_served(server: RawServer) -> None:
    host, port = server.host, server.port
    request = (
        b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Pad: " + b"a" * 12_000 + b"\r\n\r\n"
    )
    status, _, body = _parse(_exchange(host, port, request))
    assert (status, json.loads(body)) == (200, {"status": "ok"})


def _cpu_seconds(pid: int) -> float:
    """The process's user and system CPU time so far (proc(5): fields 14 and 15, in clock ticks)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _assert_served(server: RawServer) -> None:
    with urllib.request.urlopen(f"http://{server.host}:{server.port}/healthz", timeout=10) as answer:
        assert answer.status == 200


def test_an_endless_header_is_refused_within_its_first_bytes(server: RawServer) -> None:
    """A header value that never ends is counted as it arrives: refused once the head passes 16 KiB, at
    the cost of those 16 KiB, while another client is served. httptools hands a header over only when its
    line ends, so a 64 MiB value was kept (and copied, read after read) whole: 5.5 s of CPU, +123 MiB."""
    endless = 64 * 1024 * 1024
    chunk = b"a" * 65536
    answer = bytearray()
    cpu_before = _cpu_seconds(server.pid)
    sent = 0
    with socket.create_connection((server.host, server.port), timeout=30) as connection:

        def read_answer() -> None:
            with contextlib.suppress(OSError):
                while received := connection.recv(65536):
                    answer.extend(received)

        reader = threading.Thread(target=read_answer)
        reader.start()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            connection.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Endless: " + chunk)
            sent = len(chunk)
            _assert_served(server)  # another client, while the endless header is under way
            while sent < endless:
                connection.sendall(chunk)
                sent += len(chunk)
        reader.join(timeout=30)
    _assert_served(server)
    cpu = _cpu_seconds(server.pid) - cpu_before
    print(f"sent {sent} bytes of the header before the server closed; server CPU {cpu:.3f} s")
    assert sent < endless // 8  # the server closed early: socket buffers, not the header, bound what went
    assert cpu < 0.1
    if answer:  # the refusal, unless the reset that followed the close overtook it
        status, headers, body = _parse(bytes(answer))
        assert (status, headers["content-type"]) == (400, "application/problem+json")
        assert json.loads(body)["code"] == "bad_request"


def _answer_to_a_stalled_request(server: RawServer, start: bytes) -> tuple[float, bytes]:
    with socket.create_connection((server.host, server.port), timeout=30) as connection:
        started = time.monotonic()
        connection.sendall(start)
        received = b""
        while chunk := connection.recv(65536):  # until the server closes the connection
            received += chunk
        return time.monotonic() - started, received


@pytest.mark.parametrize(
    ("label", "start"),
    [("nothing at all", b""), ("half a head", b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Half: ab")],
)
def test_a_head_that_stops_arriving_is_answered_408_and_closed(
    server: RawServer, label: str, start: bytes
) -> None:
    waited, answer = _answer_to_a_stalled_request(server, start)
    status, headers, body = _parse(answer)
    assert (status, headers["content-type"], headers["connection"]) == (
        408,
        "application/problem+json",
        "close",
    )
    assert json.loads(body)["code"] == "request_timeout"
    assert HEAD_TIMEOUT_SECONDS - 0.5 <= waited < HEAD_TIMEOUT_SECONDS + 20  # then closed, not left open


def test_a_body_that_stops_arriving_is_answered_408_and_closed(server: RawServer) -> None:
    start = b"POST /v1/accounts HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
    waited, answer = _answer_to_a_stalled_request(server, start)
    status, headers, body = _parse(answer)
    assert (status, headers["content-type"], headers["connection"]) == (
        408,
        "application/problem+json",
        "close",
    )
    problem = json.loads(body)
    assert (problem["code"], problem["request_id"]) == ("request_timeout", headers["x-request-id"])
    assert BODY_TIMEOUT_SECONDS - 0.5 <= waited < BODY_TIMEOUT_SECONDS + 20


def test_a_client_that_hangs_up_mid_body_is_no_server_error(server: RawServer) -> None:
    """Nothing was answered and nothing went wrong in the service: neither a 500 in the metrics nor an
    error in the log, but a 499 (nginx's "client closed request")."""
    start = (
        b"POST /v1/accounts HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: 100\r\n\r\n{"
    )
    with socket.create_connection((server.host, server.port), timeout=10) as connection:
        connection.sendall(start)
        time.sleep(0.2)  # the request is under way, its body being read

    def hung_up(line: str) -> bool:
        return 'method="POST"' in line and 'status="499"' in line

    requests = _counted_requests_once(server, hung_up)
    assert any(hung_up(line) for line in requests), requests
    assert not any('status="500"' in line for line in requests), requests
    lines = [json.loads(line) for line in server.log_path.read_text().splitlines() if line.startswith("{")]
    assert not [line for line in lines if line["level"] in ("error", "critical")]


def _counted_requests_once(
    server: RawServer, wanted: Callable[[str], bool], seconds: float = 30
) -> list[str]:
    """The exposition's request counts once one line is `wanted`, or as they are after `seconds`. The server
    counts a hang-up when its event loop gets to it: a fixed pause (0.5 s) can be too short on a
    loaded machine. /metrics renders at most once a second, so this asks again each second."""
    deadline = time.monotonic() + seconds
    while True:
        with urllib.request.urlopen(f"http://{server.host}:{server.port}/metrics", timeout=10) as scrape:
            exposition = scrape.read().decode()
        requests = [
            line
            for line in exposition.splitlines()
            if line.startswith("pokna_http_request_duration_seconds_count")
        ]
        if any(wanted(line) for line in requests) or time.monotonic() > deadline:
            return requests
        time.sleep(1.0)
