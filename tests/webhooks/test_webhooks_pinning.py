"""An attempt connects to the very address its check approved (pokna.webhooks.pinning): a name that
answers an allowed address to the check and a forbidden one afterwards (DNS rebinding) never reaches the
forbidden one, while the Host header, the TLS server name and the certificate's check stay the name's.

DNS is the outside world here: the tests answer for made-up names, by replacing the system's resolver
(socket.getaddrinfo, which any client would ask) or by giving the worker a resolver of their own."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import ipaddress
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from pokna.runtime import Runtime
from pokna.settings import Environment, Settings
from pokna.webhooks.addresses import Address, UrlPolicy
from pokna.webhooks.attempts import AttemptResult, Claim
from pokna.webhooks.pinning import new_client
from pokna.webhooks.policy import DeliveryPolicy
from pokna.webhooks.schemas import AttemptError
from pokna.webhooks.sending import send
from pokna.webhooks.service import WorkerReport, run_worker
from pokna.webhooks.signing import generate_secret
from support.tenant_api import TenantApi, new_tenant
from support.webhook_receiver import Receiver, running_receiver
from support.webhook_worker import fast_webhook_settings

__all__ = ["fast_webhook_settings"]  # the `settings` fixture of this module: retries in milliseconds

NAME = "rebinding.test"
ALLOWED = "127.0.0.1"  # where the receiver listens
FORBIDDEN = "127.0.0.2"  # what the name answers once it has been checked

# Production's address rule, with the receiver's loopback address as the one allowed private network
# (production itself never allows loopback; tests may, and that is all this policy adds).
ONLY_THE_RECEIVER = UrlPolicy(
    https_only=False,
    public_addresses_only=True,
    allowed_private_networks=(ipaddress.ip_network(f"{ALLOWED}/32"),),
    local_receivers=True,
)
DEVELOPMENT = UrlPolicy(https_only=False, public_addresses_only=False)


@dataclasses.dataclass
class Listener:
    """A bare TCP listener standing for the forbidden address: it counts the connections it gets."""

    connections: int = 0


@contextmanager
def listening(address: str, port: int) -> Iterator[Listener]:
    listener = Listener()
    server = socket.create_server((address, port))
    server.settimeout(0.05)
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                connection, _ = server.accept()
            except TimeoutError:
                continue
            listener.connections += 1
            connection.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield listener
    finally:
        stop.set()
        thread.join(timeout=10)
        server.close()


@contextmanager
def rebinding_dns(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The system's resolver, except that NAME answers ALLOWED the first time and FORBIDDEN after;
    yields the answers given for NAME, in order."""
    answers: list[str] = []
    system = socket.getaddrinfo

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host != NAME:
            return system(host, port, *args, **kwargs)
        answer = ALLOWED if not answers else FORBIDDEN
        answers.append(answer)
        return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (answer, int(port)))]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    yield answers


def subscribe(tenant: TenantApi, url: str) -> str:
    made = tenant.post("/v1/webhooks/endpoints", {"url": url, "event_types": ["ledger.deposit.posted"]})
    assert made.status_code == 201, made.text
    endpoint_id: str = made.json()["id"]
    return endpoint_id


def work(runtime: Runtime, **options: Any) -> WorkerReport:
    """The worker, with ONLY_THE_RECEIVER for its URL policy, until nothing is left to send."""
    policy = dataclasses.replace(DeliveryPolicy.from_settings(runtime.settings), urls=ONLY_THE_RECEIVER)
    deadline = time.monotonic() + 60
    return asyncio.run(
        run_worker(
            runtime.aio,
            runtime.keys.seed_key,
            policy,
            poll_seconds=0.005,
            drain=True,
            should_stop=lambda: time.monotonic() > deadline,
            **options,
        )
    )


def port_of(receiver: Receiver) -> int:
    return int(receiver.url.rsplit(":", 1)[1].split("/", 1)[0])


def test_a_name_rebound_after_its_check_is_never_connected_at_its_new_address(
    client: TestClient, sessions: sessionmaker[Session], runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    tenant = new_tenant(client, sessions)
    with running_receiver() as receiver, listening(FORBIDDEN, port_of(receiver)) as forbidden:
        endpoint_id = subscribe(tenant, f"http://{NAME}:{port_of(receiver)}/hooks")
        tenant.wallet(10)
        with rebinding_dns(monkeypatch) as answers:
            report = work(runtime)
        receiver.wait_idle()
        assert forbidden.connections == 0
        assert answers == [ALLOWED]  # resolved once, for the check; the connection did not ask again
        [request] = receiver.requests()
        assert request.headers["host"] == f"{NAME}:{port_of(receiver)}"
        assert (report.attempts, report.delivered) == (1, 1)
    [delivery] = tenant.get(f"/v1/webhooks/endpoints/{endpoint_id}/deliveries").json()["data"]
    assert delivery["status"] == "delivered"


def test_each_attempt_resolves_once_and_a_forbidden_answer_is_refused_unconnected(
    client: TestClient, sessions: sessionmaker[Session], runtime: Runtime
) -> None:
    """Through the worker's resolver seam: the second attempt's answer is forbidden, so that attempt is
    refused before connecting; the third is allowed again and delivers."""
    tenant = new_tenant(client, sessions)
    asked: list[tuple[str, int]] = []
    answers = [ALLOWED, FORBIDDEN, ALLOWED]

    def resolve(host: str, port: int) -> list[Address]:
        asked.append((host, port))
        return [ipaddress.ip_address(answers[len(asked) - 1])]

    with running_receiver(fail_first=1) as receiver, listening(FORBIDDEN, port_of(receiver)) as forbidden:
        endpoint_id = subscribe(tenant, f"http://{NAME}:{port_of(receiver)}/hooks")
        tenant.wallet(10)
        report = work(runtime, resolve=resolve)
        receiver.wait_idle()
        assert forbidden.connections == 0
        assert asked == [(NAME, port_of(receiver))] * 3
        assert [request.answered for request in receiver.requests()] == [503, 200]
        assert (report.attempts, report.delivered) == (3, 1)
    [delivery] = tenant.get(f"/v1/webhooks/endpoints/{endpoint_id}/deliveries").json()["data"]
    assert (delivery["attempts"], delivery["status"]) == (3, "delivered")


def test_when_connecting_to_one_approved_address_fails_the_next_one_is_tried() -> None:
    """What the system's own connect does with several answers, kept: nothing was sent to the first
    (nothing listens at the receiver's port on 127.0.0.3, so connecting there is refused)."""
    with running_receiver() as receiver:

        def resolve(host: str, port: int) -> list[Address]:
            return [ipaddress.ip_address("127.0.0.3"), ipaddress.ip_address(ALLOWED)]

        async def attempt() -> AttemptResult:
            pinned = new_client()
            try:
                claim = a_claim(f"http://{NAME}:{port_of(receiver)}/h")
                return await send(pinned, delivery_policy(DEVELOPMENT), claim, resolve)
            finally:
                await pinned.close()

        result = asyncio.run(attempt())
        assert (result.status_code, result.error) == (200, None)
        assert len(receiver.requests()) == 1


def a_claim(url: str) -> Claim:
    return Claim("ten_1", "whdl_1", "token", 1, "msg_1", b'{"type":"test"}', url, (generate_secret(),))


def delivery_policy(urls: UrlPolicy) -> DeliveryPolicy:
    base = DeliveryPolicy.from_settings(Settings(env=Environment.TEST, webhook_timeout_seconds=5))
    return dataclasses.replace(base, urls=urls)


# TLS: a receiver whose certificate names HOST only (no IP address), signed by a CA of the test's own.
HOST = "hooks.test"


@dataclasses.dataclass
class TlsReceiver:
    port: int
    client_context: ssl.SSLContext
    server_names: list[str | None]
    hosts: list[str]


@contextmanager
def tls_receiver(tmp_path: Path) -> Iterator[TlsReceiver]:
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Pokna test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, HOST)]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(HOST)]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    (tmp_path / "leaf.pem").write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    (tmp_path / "leaf.key").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(tmp_path / "leaf.pem", tmp_path / "leaf.key")
    server_names: list[str | None] = []
    hosts: list[str] = []

    def remember(_socket: Any, server_name: str | None, _context: Any) -> None:
        server_names.append(server_name)

    server_context.sni_callback = remember

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length", "0")))
            hosts.append(self.headers.get("host", ""))
            self.send_response(204)
            self.send_header("content-length", "0")
            self.end_headers()

    server = ThreadingHTTPServer((ALLOWED, 0), Handler)
    server.socket = server_context.wrap_socket(server.socket, server_side=True)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    client_context = ssl.create_default_context(cadata=ca.public_bytes(serialization.Encoding.PEM).decode())
    try:
        yield TlsReceiver(server.server_address[1], client_context, server_names, hosts)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def test_tls_names_and_checks_the_urls_host_not_the_address_connected_to(tmp_path: Path) -> None:
    with tls_receiver(tmp_path) as receiver:
        policy = delivery_policy(dataclasses.replace(DEVELOPMENT, https_only=True))

        async def attempts() -> tuple[AttemptResult, AttemptResult]:
            pinned = new_client(receiver.client_context)
            try:
                delivered = await send(
                    pinned, policy, a_claim(f"https://{HOST}:{receiver.port}/hooks"), pinned_to_receiver
                )
                # Another name pinned to the same address: its certificate does not name it, so nothing is sent.
                refused = await send(
                    pinned,
                    policy,
                    a_claim(f"https://elsewhere.test:{receiver.port}/hooks"),
                    pinned_to_receiver,
                )
            finally:
                await pinned.close()
            return delivered, refused

        delivered, refused = asyncio.run(attempts())
        assert (delivered.status_code, delivered.error) == (204, None)
        assert (refused.status_code, refused.error) == (None, AttemptError.CONNECTION)
        assert receiver.server_names == [HOST, "elsewhere.test"]
        assert receiver.hosts == [f"{HOST}:{receiver.port}"]


def pinned_to_receiver(host: str, port: int) -> list[Address]:
    return [ipaddress.ip_address(ALLOWED)]


def test_a_client_never_connects_a_host_nobody_pinned() -> None:
    with running_receiver() as receiver:

        async def unpinned() -> None:
            pinned = new_client()
            try:
                await pinned.http.post(receiver.url, content=b"{}")
            finally:
                await pinned.close()

        with pytest.raises(httpx.ConnectError, match="no checked address"):
            asyncio.run(unpinned())
        assert receiver.arrivals == 0
