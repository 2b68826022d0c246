"""A receiver that answers a byte at a time, each byte well within the read timeout, holds an attempt no
longer than the timeout: httpx's timeouts are per read, so without a deadline on the whole answer's head
such a receiver held the worker (and every other tenant's deliveries behind it) for as long as it liked,
past the claim's lease, when another worker may take the same delivery and send it again."""

from __future__ import annotations

import asyncio
import dataclasses
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from pokna.settings import Environment, Settings
from pokna.webhooks.addresses import UrlPolicy
from pokna.webhooks.attempts import AttemptResult, Claim
from pokna.webhooks.pinning import new_client
from pokna.webhooks.policy import DeliveryPolicy
from pokna.webhooks.schemas import AttemptError
from pokna.webhooks.sending import send
from pokna.webhooks.signing import generate_secret

HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 2\r\n\r\nok"
BYTE_EVERY_SECONDS = 0.2  # a fifth of the timeout: no single read ever waits long enough to time out
TIMEOUT_SECONDS = 1.0


@dataclasses.dataclass
class Trickler:
    port: int = 0
    bytes_sent: int = 0
    hung_up: threading.Event = dataclasses.field(default_factory=threading.Event)


@contextmanager
def trickling_receiver() -> Iterator[Trickler]:
    """Reads one request's head, then answers HEAD a byte at a time until the sender hangs up."""
    trickler = Trickler()
    server = socket.create_server(("127.0.0.1", 0))
    trickler.port = server.getsockname()[1]

    def answer() -> None:
        connection, _ = server.accept()
        with connection:
            connection.settimeout(30)
            received = b""
            while b"\r\n\r\n" not in received:
                received += connection.recv(65536)
            try:
                for byte in HEAD:
                    connection.sendall(bytes([byte]))
                    trickler.bytes_sent += 1
                    time.sleep(BYTE_EVERY_SECONDS)
            except OSError:  # the sender hung up: a reset or a broken pipe
                trickler.hung_up.set()

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    try:
        yield trickler
    finally:
        thread.join(timeout=len(HEAD) * BYTE_EVERY_SECONDS + 10)
        server.close()


def attempt(port: int) -> AttemptResult:
    base = DeliveryPolicy.from_settings(
        Settings(env=Environment.TEST, webhook_timeout_seconds=TIMEOUT_SECONDS)
    )
    policy = dataclasses.replace(base, urls=UrlPolicy(https_only=False, public_addresses_only=False))
    claim = Claim(
        "ten_1",
        "whdl_1",
        "token",
        1,
        "msg_1",
        b'{"type":"test"}',
        f"http://127.0.0.1:{port}/h",
        (generate_secret(),),
    )

    async def sent() -> AttemptResult:
        client = new_client()
        try:
            return await send(client, policy, claim)
        finally:
            await client.close()

    return asyncio.run(sent())


def test_an_answer_trickled_a_byte_at_a_time_times_out_and_the_sender_hangs_up() -> None:
    with trickling_receiver() as trickler:
        result = attempt(trickler.port)
        assert (result.status_code, result.error) == (None, AttemptError.TIMEOUT)
        assert trickler.hung_up.wait(timeout=30)
    assert trickler.bytes_sent < len(HEAD)  # the sender left before the answer's head was over
