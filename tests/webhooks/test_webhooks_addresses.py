"""Where a webhook may be sent (pokna.webhooks.addresses): an IPv6 address that carries an IPv4 one is
judged by the IPv4 address it carries."""

from __future__ import annotations

import ipaddress

import pytest

from pokna.webhooks.addresses import UnsafeUrl, UrlPolicy, carried_ipv4, is_public
from support.url_checks import check_url

PRODUCTION = UrlPolicy(https_only=True, public_addresses_only=True)
METADATA = "169.254.169.254"
PUBLIC = "93.184.215.14"


# Each form that carries an IPv4 address, once around the metadata service (or loopback) and once around
# a public address. Teredo stores its client's address bit-inverted (~169.254.169.254 is 86.1.86.1).
CARRIERS = [
    ("IPv4-mapped", f"::ffff:{METADATA}", METADATA),
    ("IPv4-mapped", f"::ffff:{PUBLIC}", PUBLIC),
    ("6to4", "2002:a9fe:a9fe::", METADATA),
    ("6to4", "2002:7f00:1::1", "127.0.0.1"),
    ("6to4", "2002:5db8:d70e::", PUBLIC),
    ("NAT64", "64:ff9b::a9fe:a9fe", METADATA),
    ("NAT64", "64:ff9b::5db8:d70e", PUBLIC),
    ("local-use NAT64", "64:ff9b:1::a9fe:a9fe", METADATA),
    ("local-use NAT64", "64:ff9b:1::5db8:d70e", PUBLIC),
    ("Teredo", "2001:0:4136:e378:8000:63bf:5601:5601", METADATA),
    ("Teredo", "2001:0:4136:e378:8000:63bf:80ff:fffe", "127.0.0.1"),
    ("Teredo", "2001:0:4136:e378:8000:63bf:a247:28f1", PUBLIC),
]


@pytest.mark.parametrize(("form", "address", "carried"), CARRIERS)
def test_an_ipv6_address_carrying_an_ipv4_one_is_judged_by_it(form: str, address: str, carried: str) -> None:
    ipv6 = ipaddress.IPv6Address(address)
    assert carried_ipv4(ipv6) == ipaddress.IPv4Address(carried), form
    assert is_public(ipv6) is (carried == PUBLIC)


@pytest.mark.parametrize(("form", "address", "carried"), CARRIERS)
def test_production_refuses_a_url_whose_ipv6_address_carries_a_forbidden_ipv4_one(
    form: str, address: str, carried: str
) -> None:
    url = f"https://[{address}]/hooks"
    if carried == PUBLIC:
        check_url(url, PRODUCTION)
    else:
        with pytest.raises(UnsafeUrl, match="non-public"):
            check_url(url, PRODUCTION)


def test_a_local_use_nat64_address_cut_short_of_96_bits_is_refused() -> None:
    """Its IPv4 address sits elsewhere for each prefix length (RFC 6052), so the last 32 bits prove
    nothing: 64:ff9b:1:a9fe:a9:fe00:: is 169.254.169.254 behind a /48, whatever its tail says."""
    for address in ("64:ff9b:1:a9fe:a9:fe00::", "64:ff9b:1:a9fe:a9:fe00:5db8:d70e"):
        assert carried_ipv4(ipaddress.IPv6Address(address)) is None
        assert not is_public(ipaddress.IPv6Address(address))
        with pytest.raises(UnsafeUrl, match="non-public"):
            check_url(f"https://[{address}]/hooks", PRODUCTION)
