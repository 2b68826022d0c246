"""Pure parts of the webhooks: signatures checked by the standardwebhooks package (an implementation we did
not write), sealed secrets, the backoff schedule, and which addresses count as public."""

from __future__ import annotations

import ipaddress
import random
import time
from datetime import timedelta

import pytest
from cryptography.exceptions import InvalidTag
from hypothesis import given
from hypothesis import strategies as st
from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

from pokna.settings import Settings
from pokna.webhooks.addresses import UnsafeUrl, UrlPolicy, check_url_form, is_public
from pokna.webhooks.backoff import JITTER, nominal_wait, wait_after
from pokna.webhooks.signing import generate_secret, open_secret, seal_secret, signature_header
from support.url_checks import check_url

ids = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_", min_size=1, max_size=40)


@given(message_id=ids, body=st.text(max_size=2000), rotated=st.booleans())
def test_what_we_sign_verifies_with_standardwebhooks(message_id: str, body: str, rotated: bool) -> None:
    current, previous = generate_secret(), generate_secret()
    live = [current, previous] if rotated else [current]
    timestamp = int(time.time())
    headers = {
        "webhook-id": message_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": signature_header(live, message_id, timestamp, body.encode()),
    }
    for secret in live:
        Webhook(secret).verify(body, headers, json_parse=False)
    with pytest.raises(WebhookVerificationError):
        Webhook(generate_secret()).verify(body, headers, json_parse=False)
    with pytest.raises(WebhookVerificationError):
        Webhook(current).verify(body + " ", headers, json_parse=False)
    with pytest.raises(WebhookVerificationError):
        Webhook(current).verify(body, {**headers, "webhook-id": message_id + "x"}, json_parse=False)


def test_a_secret_is_whsec_and_24_random_bytes_sealed_to_its_endpoint() -> None:
    secret = generate_secret()
    assert secret.startswith("whsec_")
    assert len(secret) == len("whsec_") + 32
    assert generate_secret() != secret
    key = bytes(range(32))
    sealed = seal_secret(secret, key, "whep_a")
    assert secret.removeprefix("whsec_") not in sealed
    assert open_secret(sealed, key, "whep_a") == secret
    with pytest.raises(InvalidTag):  # a sealed secret copied onto another endpoint's row
        open_secret(sealed, key, "whep_b")


def test_the_default_schedule_retries_for_more_than_a_day_and_doubles_up_to_its_cap() -> None:
    fields = Settings.model_fields
    initial = fields["webhook_backoff_initial_seconds"].default
    cap = fields["webhook_backoff_max_seconds"].default
    limit = fields["webhook_attempt_limit"].default

    def retry_span(attempts: int) -> timedelta:  # from a delivery's first attempt to its last, at the least
        return timedelta(seconds=sum(nominal_wait(n, initial, cap) for n in range(1, attempts)))

    assert retry_span(limit) >= timedelta(days=1)
    assert retry_span(limit - 3) < timedelta(days=1)
    waits = [nominal_wait(n, initial, cap) for n in range(1, limit)]
    assert waits[:3] == [5.0, 10.0, 20.0]
    assert waits == sorted(waits)
    assert max(waits) == cap


@given(attempts=st.integers(min_value=1, max_value=200), seed=st.integers())
def test_jitter_only_lengthens_a_wait_and_by_at_most_a_quarter(attempts: int, seed: int) -> None:
    nominal = nominal_wait(attempts, 0.5, 3600)
    wait = wait_after(attempts, 0.5, 3600, random.Random(seed)).total_seconds()
    assert nominal <= wait <= nominal * (1 + JITTER) + 1e-9


@pytest.mark.parametrize(
    ("address", "public"),
    [
        ("93.184.215.14", True),
        ("2606:4700::6810:85e5", True),
        ("127.0.0.1", False),
        ("10.0.0.1", False),
        ("172.16.5.4", False),
        ("192.168.1.1", False),
        ("169.254.169.254", False),
        ("100.64.0.1", False),
        ("0.0.0.0", False),
        ("224.0.0.1", False),
        ("::1", False),
        ("fe80::1", False),
        ("fc00::1", False),
        ("fd00:ec2::254", False),
        ("::ffff:10.0.0.1", False),
    ],
)
def test_only_public_addresses_count_as_public(address: str, public: bool) -> None:
    assert is_public(ipaddress.ip_address(address)) is public


PRODUCTION = UrlPolicy(https_only=True, public_addresses_only=True)
DEVELOPMENT = UrlPolicy(https_only=False, public_addresses_only=False)


def test_development_takes_local_http_receivers_and_production_does_not() -> None:
    check_url("http://127.0.0.1:8080/hooks", DEVELOPMENT)
    check_url("http://localhost/hooks", DEVELOPMENT)
    with pytest.raises(UnsafeUrl, match="https"):
        check_url("http://127.0.0.1:8080/hooks", PRODUCTION)
    with pytest.raises(UnsafeUrl, match="non-public"):
        check_url("https://localhost/hooks", PRODUCTION)
    with pytest.raises(UnsafeUrl, match="does not resolve"):
        check_url("https://no-such-host.invalid/hooks", PRODUCTION)
    check_url("https://localhost/hooks", UrlPolicy(https_only=True, public_addresses_only=False))


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("gopher://example.org/", "http"),
        ("http:///no-host", "no host"),
        ("http://user:secret@example.org/", "credentials"),
        ("http://example.org/#fragment", "fragment"),
        ("http://example.org:70000/", "port"),
        # no server listens on port 0: the delivery's client would send to the scheme's default port
        ("http://example.org:0/", "port"),
    ],
)
def test_a_malformed_url_is_refused_saying_why(url: str, reason: str) -> None:
    with pytest.raises(UnsafeUrl, match=reason):
        check_url_form(url, DEVELOPMENT)
