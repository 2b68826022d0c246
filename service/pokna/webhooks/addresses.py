"""Which URLs a webhook may be sent to.

In production a URL must be https, and every address its host resolves to must be a public one: never
loopback, private, link-local (which holds the cloud metadata service, 169.254.169.254), shared, multicast,
reserved or unspecified, unless `POKNA_WEBHOOK_ALLOW_PRIVATE_ADDRESSES` says otherwise. The check is made
when an endpoint is saved and again before every attempt, since what a name resolves to can change. In
development and tests plain http and local receivers are fine.

What is left: the sender resolves the name again to connect, so a name whose answer changes between the
check and the connection (DNS rebinding) could still reach a private address for that one attempt.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

# Not covered by ipaddress's is_private on every Python: the AWS IPv6 metadata address, and the
# carrier-grade NAT range (RFC 6598), which is not the public internet either.
_ALSO_REFUSED = (ipaddress.ip_network("fd00:ec2::/32"), ipaddress.ip_network("100.64.0.0/10"))


class UnsafeUrl(ValueError):
    """The URL may not receive webhooks here; the message says why, for the caller who gave it."""


@dataclass(frozen=True)
class UrlPolicy:
    https_only: bool
    public_addresses_only: bool


def check_url_form(url: str, policy: UrlPolicy) -> str:
    """The URL's host, if its form is acceptable (no resolution: for saving an endpoint quickly)."""
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
        parts.port  # noqa: B018 (raises on a malformed port)
    except ValueError:
        raise UnsafeUrl("the URL's port is not a number from 0 to 65535") from None
    return parts.hostname


def check_url(url: str, policy: UrlPolicy) -> None:
    """The URL's form, and, if the policy wants public addresses only, where its host resolves now."""
    host = check_url_form(url, policy)
    if not policy.public_addresses_only:
        return
    port = urlsplit(url).port or 443
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise UnsafeUrl(f"the host {host!r} does not resolve") from None
    for *_, sockaddr in found:
        address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
        if not is_public(address):
            raise UnsafeUrl(f"the host {host!r} resolves to a non-public address ({address})")


def is_public(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return is_public(address.ipv4_mapped)
    return not (
        address.is_private
        or address.is_loopback
        or address.is_link_local
        or address.is_multicast
        or address.is_reserved
        or address.is_unspecified
        or any(address in network for network in _ALSO_REFUSED)
    )
