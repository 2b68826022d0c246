"""A real webhook receiver on 127.0.0.1, for the delivery tests: a small threaded `http.server` that
records every request it gets and answers as a test tells it to (fail the first N in some way, then 200).

Failures it can play: a 5xx status, a 429 (`throttled`), either with a `Retry-After` if one is set, a redirect, an answer slower than the sender's timeout (none until the
sender hangs up), a connection reset, and `hold`: keep the first request open until released (a worker can be
killed while it waits).
"""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

from standardwebhooks import Webhook

Failure = Literal["status", "throttled", "slow", "reset", "hold", "redirect"]


@dataclass(frozen=True)
class Received:
    arrival: int  # 0 for the first request the receiver got
    message_id: str
    headers: dict[str, str]
    body: bytes
    answered: int | None  # the status sent back; None for a reset, a hold or an answer given too late

    @property
    def event(self) -> dict[str, Any]:
        parsed: dict[str, Any] = json.loads(self.body)
        return parsed


@dataclass
class Receiver:
    url: str
    fail_first: int = 0
    failure: Failure = "status"
    slow_seconds: float = 30.0  # at most, for a `slow` answer: it waits for the sender to hang up
    redirect_to: str = ""  # where a `redirect` failure points
    retry_after: str | None = None  # the `Retry-After` of a `status` (503) or `throttled` (429) failure
    answer_after_seconds: float = 0.0  # a pause before every 2xx: widens any window two senders could share
    # The first request is answered only once another arrives while it waits (60 s at most): a worker sends
    # one delivery at a time, so that other request is another worker's, and both are sure to have sent.
    first_waits_for_another: bool = False
    held_from: int | None = None  # requests from this arrival on wait until `released` (60 s at most)
    another_arrived: threading.Event = field(default_factory=threading.Event)
    received: list[Received] = field(default_factory=list)  # in the order their handling ended
    arrivals: int = 0
    in_flight: dict[str, int] = field(default_factory=dict)
    overlaps: list[str] = field(default_factory=list)  # message ids seen twice at once
    released: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def requests(self) -> list[Received]:
        """Every request handled so far, in the order they arrived."""
        with self.lock:
            return sorted(self.received, key=lambda request: request.arrival)

    def delivered(self) -> list[Received]:
        """The first 2xx-answered arrival of each message, in arrival order."""
        seen: set[str] = set()
        firsts = []
        for request in self.requests():
            ok = request.answered is not None and 200 <= request.answered < 300
            if ok and request.message_id not in seen:
                seen.add(request.message_id)
                firsts.append(request)
        return firsts

    def wait_idle(self, seconds: float = 30.0) -> None:
        """Until every request that arrived has been handled (a slow one may outlive its sender's wait)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            with self.lock:
                if len(self.received) == self.arrivals:
                    return
            time.sleep(0.02)
        raise AssertionError(f"the receiver still handles requests after {seconds} s")

    def wait_for(self, count: int, seconds: float = 60.0) -> list[Received]:
        """Until `count` distinct messages were answered 2xx, bounded in time (then it fails)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if len(self.delivered()) >= count:
                return self.delivered()
            time.sleep(0.05)
        raise AssertionError(f"{len(self.delivered())} of {count} messages arrived in {seconds} s")

    def verify_all(self, secret: str) -> None:
        """Every 2xx-answered message verifies with `secret`, per the standardwebhooks package."""
        webhook = Webhook(secret)
        for request in self.delivered():
            webhook.verify(request.body, request.headers)


def _handler(receiver: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            body = self.rfile.read(length)
            headers = {name.lower(): value for name, value in self.headers.items()}
            message_id = headers.get("webhook-id", "")
            with receiver.lock:
                number = receiver.arrivals
                receiver.arrivals += 1
                if receiver.in_flight.get(message_id):
                    receiver.overlaps.append(message_id)
                receiver.in_flight[message_id] = receiver.in_flight.get(message_id, 0) + 1
            if number > 0:
                receiver.another_arrived.set()
            elif receiver.first_waits_for_another:
                receiver.another_arrived.wait(timeout=60)
            if receiver.held_from is not None and number >= receiver.held_from:
                receiver.released.wait(timeout=60)
            failing = number < receiver.fail_first
            answered: int | None = 200
            try:
                if failing and receiver.failure == "status":
                    answered = 503
                elif failing and receiver.failure == "throttled":
                    answered = 429
                elif failing and receiver.failure == "redirect":
                    answered = 307
                elif failing and receiver.failure == "slow":
                    _wait_for_hang_up(self.connection, receiver.slow_seconds)
                    answered = None  # the sender gave up before this answer
                elif failing and receiver.failure == "reset":
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    answered = None
                elif failing and receiver.failure == "hold":
                    receiver.released.wait(timeout=30)
                    answered = None
                elif receiver.answer_after_seconds:
                    time.sleep(receiver.answer_after_seconds)
                with receiver.lock:
                    receiver.received.append(Received(number, message_id, headers, body, answered))
                if answered is None:
                    self.close_connection = True
                    return
                self.send_response(answered)
                if answered == 307:
                    self.send_header("location", receiver.redirect_to)
                if answered in (429, 503) and receiver.retry_after is not None:
                    self.send_header("retry-after", receiver.retry_after)
                self.send_header("content-type", "text/plain")
                reply = b"a receiver's body, never shown to anyone"
                self.send_header("content-length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)
            finally:
                with receiver.lock:
                    receiver.in_flight[message_id] -= 1

    return Handler


def _wait_for_hang_up(connection: socket.socket, seconds: float) -> None:
    """Until the sender closes the connection (its timeout ran out), or `seconds` at most: an answer slower
    than the sender's timeout whatever that timeout is, and a test no slower than the timeout makes it."""
    connection.settimeout(seconds)
    with contextlib.suppress(OSError):  # a timeout or a reset: nothing more will be read either way
        while connection.recv(4096):
            pass


@contextmanager
def running_receiver(fail_first: int = 0, failure: Failure = "status") -> Iterator[Receiver]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(Receiver(url="")))
    receiver = Receiver(
        url=f"http://127.0.0.1:{server.server_address[1]}/hooks", fail_first=fail_first, failure=failure
    )
    server.RequestHandlerClass = _handler(receiver)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        receiver.released.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
