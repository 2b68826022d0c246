"""Which URLs a webhook may be sent to, and which addresses of their hosts.

In production a URL must be https, and every address its host resolves to must be a public one: never
loopback, private, link-local (which holds the cloud metadata service, 169.254.169.254), shared, multicast,
reserved or unspecified. `POKNA_WEBHOOK_ALLOWED_PRIVATE_NETWORKS` lets receivers on the networks it lists
through, but never those on addresses no tenant's receiver has any business on (`_NEVER_ALLOWED`: loopback,
link-local with the metadata services, unspecified, multicast, broadcast), whatever it lists. An IPv6
address that carries an IPv4 one (IPv4-mapped, 6to4, NAT64, Teredo) is judged by the IPv4 address it
carries, since that is where the packets end up. In development and tests plain http and any address
are fine.

The check is made when an endpoint is saved and again before every attempt, since what a name resolves to
can change; the attempt then connects only to an address that check approved and never resolves the name
again (pokna.webhooks.pinning), so a name whose answer changes in between (DNS rebinding) cannot steer it.
`resolve_host` is the one place a webhook's host is resolved.

The system's resolver blocks, for as long as its own timeouts and retries say (seconds per server, a
server after another). So the async roads (`allowed_addresses_within`, `check_url_within`: a delivery's
attempt, an endpoint's check) ask it in a thread of its own, off the event loop, and wait for its answer
only as long as the webhook timeout: a slow resolver then costs that one attempt or request its timeout,
and nothing else on the loop waits for it. The thread is not the "no thread hop" the database road avoids
(docs/architecture.md): nothing of the database goes through it, only the lookup, which has no async form
that reads /etc/hosts and nsswitch as the system's resolver does. A lookup given up on finishes in its
(daemon) thread, and its answer is dropped. At most MAX_LOOKUPS of them wait on the resolver at once: one
more is given up at once, without a thread, so a resolver that never answers costs a bounded number of
threads, not one per attempt.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Resolver = Callable[[str, int], list[Address]]

# Not covered by ipaddress's is_private on every Python: the AWS IPv6 metadata address, and the
# carrier-grade NAT range (RFC 6598), which is not the public internet either.
_ALSO_REFUSED = (ipaddress.ip_network("fd00:ec2::/32"), ipaddress.ip_network("100.64.0.0/10"))

# Refused in production even inside an allowed private network: the host itself, the link (with the
# metadata services), "this network" (0.0.0.0 reaches the host itself on Linux), and many receivers at once.
_NEVER_ALLOWED = tuple(
    ipaddress.ip_network(network)
    for network in (
        "0.0.0.0/8",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "224.0.0.0/4",
        "255.255.255.255/32",
        "::/128",
        "::1/128",
        "::/96",  # IPv4-compatible (deprecated): not a form any receiver is reached by
        "fe80::/10",
        "ff00::/8",
        "fd00:ec2::/32",
    )
)

# IPv6 prefixes that carry an IPv4 address in their last 32 bits (RFC 6052). The well-known prefix is
# always used as a /96; the local-use one may be cut anywhere from /48 to /96, and only the /96 form (the
# bits between /48 and /96 all zero) says for certain which IPv4 address it reaches.
_NAT64_WELL_KNOWN = ipaddress.ip_network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")
_NAT64_LOCAL_MIDDLE = ((1 << 48) - 1) << 32


class UnsafeUrl(ValueError):
    """The URL may not receive webhooks here; the message says why, for the caller who gave it."""


class HostNotFound(UnsafeUrl):
    """The URL's host does not resolve now: there is no address to judge or to connect to."""


class ResolutionTimedOut(HostNotFound):
    """The resolver did not answer within the webhook timeout (or is still busy with MAX_LOOKUPS lookups)."""


MAX_LOOKUPS = 32
"""Lookups of this process waiting on the resolver at once, those given up on included (their threads end
only when it answers). Without a cap a resolver that never answers would keep one more thread for each
attempt or endpoint check; the thread pool the lookup used before had 32 at most (asyncio.to_thread)."""
_LOOKUP_PLACES = threading.BoundedSemaphore(MAX_LOOKUPS)


@dataclass(frozen=True)
class UrlPolicy:
    https_only: bool
    public_addresses_only: bool
    allowed_private_networks: tuple[Network, ...] = ()
    # Development and tests: the allowed networks may hold loopback or link-local receivers.
    local_receivers: bool = False

    def allows(self, address: Address) -> bool:
        if not self.public_addresses_only:
            return True
        judged = carried_ipv4(address) if isinstance(address, ipaddress.IPv6Address) else address
        if judged is None:
            return False
        if not self.local_receivers and any(judged in network for network in _NEVER_ALLOWED):
            return False
        return is_public(judged) or any(_on(judged, network) for network in self.allowed_private_networks)


def _on(address: Address, network: Network) -> bool:
    """A host of `network`: its broadcast address (and, by the same convention, its network address) is
    not one, when the network is large enough to have them."""
    if address not in network:
        return False
    if isinstance(network, ipaddress.IPv4Network) and network.prefixlen < 31:
        return address not in (network.network_address, network.broadcast_address)
    return True


def check_url_form(url: str, policy: UrlPolicy) -> str:
    """The URL's host, if its form is acceptable (no resolution: for saving an endpoint quickly)."""
    if any(character < " " or character == "\x7f" for character in url):
        # urlsplit drops tabs and line breaks silently, so it would judge another URL than the one saved,
        # and the delivery's client refuses every control character: each attempt would fail.
        raise UnsafeUrl("the URL has a control character (a tab or a line break, say)")
    try:
        parts = urlsplit(url)
    except ValueError:  # an unbalanced `[` of an IPv6 host, say
        raise UnsafeUrl("the URL is malformed") from None
    allowed = ("https",) if policy.https_only else ("https", "http")
    if parts.scheme not in allowed:
        raise UnsafeUrl(f"the URL must be {' or '.join(allowed)}")
    if not parts.hostname:
        raise UnsafeUrl("the URL has no host")
    if parts.username or parts.password:
        raise UnsafeUrl("the URL may not carry credentials; authenticate with the signature")
    if parts.fragment:
        raise UnsafeUrl("the URL may not have a fragment")
    try:
        port = parts.port  # raises on a malformed port
    except ValueError:
        port = 0
    if port == 0:  # nothing listens on port 0, and the delivery's client would send to the default port
        raise UnsafeUrl("the URL's port is not a number from 1 to 65535")
    return parts.hostname


async def check_url_within(
    url: str, policy: UrlPolicy, seconds: float, resolve: Resolver | None = None
) -> None:
    """The URL's form, and, if the policy wants public addresses only, where its host resolves now (the
    lookup off the event loop, given up after `seconds`: ResolutionTimedOut)."""
    host = check_url_form(url, policy)
    if policy.public_addresses_only:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        await allowed_addresses_within(host, port, policy, seconds, resolve)


async def allowed_addresses_within(
    host: str, port: int, policy: UrlPolicy, seconds: float, resolve: Resolver | None = None
) -> list[Address]:
    """What `host` resolves to now, in the resolver's order, if the policy allows every one of them (a
    single refused address refuses the host, since which answer a client takes is not ours to choose). The
    lookup runs in a thread of its own, the event loop free meanwhile, and is given up after `seconds`
    (ResolutionTimedOut), or not started while MAX_LOOKUPS are waiting on the resolver (ResolutionTimedOut
    too)."""
    loop = asyncio.get_running_loop()
    answer: asyncio.Future[list[Address]] = loop.create_future()

    def settle(found: list[Address] | None, error: BaseException | None) -> None:
        if answer.done():  # given up on already
            return
        if error is not None:
            answer.set_exception(error)
        else:
            answer.set_result(found or [])

    def look_up() -> None:
        found, error = None, None
        try:
            found = (resolve or resolve_host)(host, port)
        except Exception as failed:
            error = failed
        finally:
            _LOOKUP_PLACES.release()
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits for this answer any more
            loop.call_soon_threadsafe(settle, found, error)

    if not _LOOKUP_PLACES.acquire(blocking=False):
        raise ResolutionTimedOut(
            f"the host {host!r} cannot be resolved now: {MAX_LOOKUPS} lookups are still waiting on the resolver"
        )
    try:
        threading.Thread(target=look_up, name=f"pokna-resolve {host}", daemon=True).start()
    except BaseException:
        _LOOKUP_PLACES.release()
        raise
    try:
        async with asyncio.timeout(seconds):
            found = await answer
    except TimeoutError:
        raise ResolutionTimedOut(f"the host {host!r} did not resolve within {seconds:g} s") from None
    return judged(host, found, policy)


def judged(host: str, found: list[Address], policy: UrlPolicy) -> list[Address]:
    """`found` (what `host` resolved to), if the policy allows every address of it."""
    if not found:
        raise HostNotFound(f"the host {host!r} does not resolve")
    for address in found:
        if not policy.allows(address):
            raise UnsafeUrl(f"the host {host!r} resolves to a non-public address ({address})")
    return found


def resolve_host(host: str, port: int) -> list[Address]:
    """The addresses of `host` from the system's resolver, in its order of preference, each once (an IP
    literal is its own answer). Tests replace it, as they would any outside world."""
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise HostNotFound(f"the host {host!r} does not resolve") from None
    addresses: list[Address] = []
    for *_, sockaddr in found:
        address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
        if address not in addresses:
            addresses.append(address)
    return addresses


def carried_ipv4(address: ipaddress.IPv6Address) -> Address | None:
    """The IPv4 address an IPv6 one delivers to, if it carries one (IPv4-mapped, 6to4, NAT64, Teredo's
    client); the address itself if it carries none; None if it may carry one we cannot tell for certain."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]  # the client, whose address Teredo stores bit-inverted
    if address in _NAT64_WELL_KNOWN:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address in _NAT64_LOCAL:
        if int(address) & _NAT64_LOCAL_MIDDLE:
            return None
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return address


def is_public(address: Address) -> bool:
    if isinstance(address, ipaddress.IPv6Address):
        carried = carried_ipv4(address)
        if carried is None:
            return False
        if carried is not address:
            return is_public(carried)
    return not (
        address.is_private
        or address.is_loopback
        or address.is_link_local
        or address.is_multicast
        or address.is_reserved
        or address.is_unspecified
        or any(address in network for network in _ALSO_REFUSED)
    )
