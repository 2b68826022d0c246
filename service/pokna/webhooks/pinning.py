"""The worker's HTTP client, which connects a webhook's host only to the address its check approved.

Checking a name and then letting the client resolve it again leaves a window: a name that answers a
public address to the check and a private one to the connection (DNS rebinding) would reach the private
one. So the client never resolves. The sender pins the approved address for the host (`pin`) before each
request, and the connection pool's network backend connects there; everything above the socket still
uses the URL's name, so the Host header, the TLS server name (SNI) and the certificate's check are those
of the name, as if it had been resolved the usual way. A host with no pinned address is not connected to.

A pooled connection is keyed by the name, so a kept-alive connection may serve a later attempt of the
same host: it goes to an address an earlier check of that host approved.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterable
from dataclasses import dataclass

import httpcore
import httpx

from pokna.webhooks.addresses import Address

USER_AGENT = "Pokna-Webhooks/1"


class PinnedAddresses(httpcore.AsyncNetworkBackend):
    """httpcore's async socket backend (anyio's), connecting each host to the address pinned for it, never resolving."""

    def __init__(self) -> None:
        self._sockets = httpcore.AnyIOBackend()
        self._pinned: dict[tuple[str, int], str] = {}

    def pin(self, host: str, port: int, address: Address) -> None:
        self._pinned[(host, port)] = str(address)

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        address = self._pinned.get((host, port))
        if address is None:
            raise httpcore.ConnectError(f"no checked address for {host}:{port}")
        return await self._sockets.connect_tcp(address, port, timeout, local_address, socket_options)

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("webhooks are not sent over Unix sockets")

    async def sleep(self, seconds: float) -> None:
        await self._sockets.sleep(seconds)


class _PinnedTransport(httpx.AsyncHTTPTransport):
    """httpx's own transport (its requests, answers and errors) over a pool that connects through
    `addresses`: httpx 0.28 takes no network backend, so the pool it built is replaced by one that does.
    The limits are httpx's defaults."""

    def __init__(self, addresses: PinnedAddresses, ssl_context: ssl.SSLContext) -> None:
        super().__init__(trust_env=False)
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context,
            max_connections=100,
            max_keepalive_connections=20,
            keepalive_expiry=5.0,
            network_backend=addresses,
        )


@dataclass(frozen=True)
class PinnedClient:
    http: httpx.AsyncClient
    addresses: PinnedAddresses

    async def close(self) -> None:
        await self.http.aclose()


def new_client(ssl_context: ssl.SSLContext | None = None) -> PinnedClient:
    """A client for one worker: no redirects, no proxies from the environment, connections to pinned
    addresses only. `ssl_context` is the CAs to trust (the bundled ones by default; tests bring their own)."""
    addresses = PinnedAddresses()
    transport = _PinnedTransport(addresses, ssl_context or httpx.create_ssl_context(trust_env=False))
    http = httpx.AsyncClient(
        transport=transport, follow_redirects=False, trust_env=False, headers={"User-Agent": USER_AGENT}
    )
    return PinnedClient(http, addresses)
