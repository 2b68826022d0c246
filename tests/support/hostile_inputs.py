"""What an outside probe fed the verifiers (issue 46): JSON nested 100,000 deep, a number of 5,000 digits,
keys named twice, endless files and pipes, and an HTTP server on 127.0.0.1 that serves such bodies or
trickles its answer a byte at a time. Every server here stops by itself.

`run_bounded` runs a command as its own process with at most 1 GiB of address space and a timeout, so a
verifier that reads an endless input into memory fails fast (MemoryError) instead of eating the machine."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

DEEP_ARRAY = "[" * 100_000 + "]" * 100_000
HUGE_NUMBER = "9" * 5_000
MEMORY_LIMIT_BYTES = 1 << 30
POKNA = str(Path(sys.executable).with_name("pokna"))
# The same offline checks through each command line, as a user runs them: argv before the command's own.
COMMANDS = {
    "pokna": ([POKNA, "verify"], [POKNA, "audit", "verify"]),
    "pokna-verify": (
        [sys.executable, "-m", "pokna_verify", "proof"],
        [sys.executable, "-m", "pokna_verify", "audit"],
    ),
}


@dataclass(frozen=True)
class Finished:
    exit_code: int
    stdout: str
    stderr: str


def run_bounded(argv: Sequence[str], *, stdin: Path | None = None, timeout: float = 120) -> Finished:
    def limit_memory() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))

    with (stdin or Path("/dev/null")).open("rb") as given:
        done = subprocess.run(
            list(argv),
            stdin=given,
            capture_output=True,
            timeout=timeout,
            preexec_fn=limit_memory,
            check=False,
        )
    return Finished(
        done.returncode, done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace")
    )


@contextmanager
def endless_fifo(path: Path, chunk: bytes = b"0" * 65536, cap_bytes: int = 256 << 20) -> Iterator[Path]:
    """A FIFO fed `chunk` after `chunk` until its reader goes away (or `cap_bytes`, so the writer always ends)."""
    os.mkfifo(path)

    def feed() -> None:
        try:
            with path.open("wb") as pipe:
                for _ in range(cap_bytes // len(chunk)):
                    pipe.write(chunk)
        except (BrokenPipeError, OSError):
            pass

    writer = threading.Thread(target=feed, name="endless fifo", daemon=True)
    writer.start()
    try:
        yield path
    finally:
        if writer.is_alive():  # no reader came: open it once so the writer's open returns and it ends
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
                os.close(fd)
            except OSError:
                pass
        writer.join(timeout=30)


@dataclass
class HostileServer:
    """Serves `bodies` by path; `/drip` (and any path under it) sends a JSON answer's headers, then a byte
    every `drip_seconds`."""

    base: str
    bodies: Mapping[str, bytes]
    drip_seconds: float
    stopping: threading.Event

    def url(self, path: str) -> str:
        return f"{self.base}{path}"


@contextmanager
def hostile_server(
    bodies: Mapping[str, bytes], *, drip_seconds: float = 0.5, lifetime_seconds: float = 30
) -> Iterator[HostileServer]:
    stopping = threading.Event()
    served: dict[str, HostileServer] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.startswith("/drip"):  # /drip/v1/logs/TENANT/checkpoint too: a log's address
                self._drip()
                return
            body = served["server"].bodies.get(self.path)
            if body is None:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _drip(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(1 << 20))
            self.end_headers()
            self.wfile.flush()
            try:
                while not stopping.wait(served["server"].drip_seconds):
                    self.wfile.write(b" ")
                    self.wfile.flush()
            except OSError:  # the client went away: what a deadline does
                pass

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    served["server"] = HostileServer(
        f"http://127.0.0.1:{server.server_address[1]}", bodies, drip_seconds, stopping
    )
    thread = threading.Thread(target=server.serve_forever, name="hostile server", daemon=True)
    thread.start()
    timer = threading.Timer(lifetime_seconds, stopping.set)
    timer.daemon = True
    timer.start()
    try:
        yield served["server"]
    finally:
        stopping.set()
        timer.cancel()
        server.shutdown()
        server.server_close()
        thread.join(timeout=30)
