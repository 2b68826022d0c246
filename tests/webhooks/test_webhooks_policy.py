"""Where webhooks may go, from the settings (pokna.webhooks.policy): production opens only the private
networks it lists, and never loopback, link-local (the metadata service), unspecified, multicast or
broadcast addresses, whatever it lists; development and tests keep their local receivers."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from pokna.app import create_app
from pokna.runtime import Runtime
from pokna.settings import Environment, Settings, SettingsError, get_settings
from pokna.webhooks.addresses import UrlPolicy
from pokna.webhooks.policy import DeliveryPolicy
from pokna_verify.crypto.signing import generate_signing_key, private_key_to_pem
from support.api_checks import assert_names_field, assert_problem
from support.tenant_api import new_tenant
from support.url_checks import check_url

SECRETS: dict[str, Any] = {
    "database_url": "postgresql+psycopg://u@h/db",
    "signing_key": "-----BEGIN PRIVATE KEY-----\n...",
    "seed_encryption_key": "00" * 32,
}


def production_urls(networks: str) -> UrlPolicy:
    settings = Settings(env=Environment.PRODUCTION, webhook_allowed_private_networks=networks, **SECRETS)
    return DeliveryPolicy.from_settings(settings).urls


@pytest.mark.parametrize(
    ("address", "allowed"),
    [
        ("93.184.215.14", True),  # public
        ("10.1.2.3", True),  # listed
        ("192.168.1.7", True),  # listed
        ("192.168.2.7", False),  # private, not listed
        ("172.16.0.1", False),
        ("fd12:3456::1", False),
        ("10.255.255.255", False),  # the broadcast address of a listed network
        ("::ffff:10.1.2.3", True),  # a listed address, IPv4-mapped
        ("::ffff:192.168.2.7", False),
    ],
)
def test_production_opens_only_the_private_networks_it_lists(address: str, allowed: bool) -> None:
    urls = production_urls("10.0.0.0/8,192.168.1.0/24")
    assert urls.allows(ipaddress.ip_address(address)) is allowed


NEVER = [
    "127.0.0.1",
    "127.8.9.10",
    "169.254.169.254",  # the cloud metadata service
    "169.254.1.1",
    "0.0.0.0",
    "0.1.2.3",
    "224.0.0.1",
    "239.255.255.250",
    "255.255.255.255",
    "::1",
    "::",
    "fe80::1",
    "ff02::1",
    "fd00:ec2::254",  # the AWS IPv6 metadata service
    "::ffff:127.0.0.1",
    "::ffff:169.254.169.254",
    "2002:a9fe:a9fe::",  # 169.254.169.254 in 6to4
    "64:ff9b::7f00:1",  # 127.0.0.1 through NAT64
    "::7f00:1",  # 127.0.0.1 IPv4-compatible (deprecated)
]


@pytest.mark.parametrize("address", NEVER)
def test_production_never_opens_loopback_link_local_multicast_or_broadcast_whatever_it_lists(
    address: str,
) -> None:
    urls = production_urls("0.0.0.0/0,::/0")
    assert urls.allows(ipaddress.ip_address("10.1.2.3"))
    assert urls.allows(ipaddress.ip_address("fd12:3456::1"))
    assert not urls.allows(ipaddress.ip_address(address))


def test_development_and_tests_keep_their_local_receivers() -> None:
    for env in (Environment.DEVELOPMENT, Environment.TEST):
        urls = DeliveryPolicy.from_settings(Settings(env=env)).urls
        for url in ("http://127.0.0.1:8080/hooks", "http://localhost/hooks", "http://169.254.169.254/"):
            check_url(url, urls)


@pytest.fixture
def environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    for name in ("POKNA_WEBHOOK_ALLOWED_PRIVATE_NETWORKS", "POKNA_WEBHOOK_ALLOW_PRIVATE_ADDRESSES"):
        monkeypatch.delenv(name, raising=False)
    get_settings.cache_clear()
    yield monkeypatch
    get_settings.cache_clear()


def test_the_networks_are_read_from_a_comma_separated_list(environment: pytest.MonkeyPatch) -> None:
    environment.setenv("POKNA_WEBHOOK_ALLOWED_PRIVATE_NETWORKS", "10.0.0.0/8, 192.168.1.0/24,fd12::/16")
    assert get_settings().webhook_allowed_private_networks == (
        ipaddress.ip_network("10.0.0.0/8"),
        ipaddress.ip_network("192.168.1.0/24"),
        ipaddress.ip_network("fd12::/16"),
    )


@pytest.mark.parametrize("networks", ["10.0.0.1/8", "ten", "10.0.0.0/8;192.168.1.0/24"])
def test_a_malformed_network_names_the_variable_and_a_valid_value(
    environment: pytest.MonkeyPatch, networks: str
) -> None:
    environment.setenv("POKNA_WEBHOOK_ALLOWED_PRIVATE_NETWORKS", networks)
    with pytest.raises(
        SettingsError, match=r"POKNA_WEBHOOK_ALLOWED_PRIVATE_NETWORKS=.* is not valid"
    ) as refused:
        get_settings()
    assert "e.g. POKNA_WEBHOOK_ALLOWED_PRIVATE_NETWORKS=10.0.0.0/8,192.168.1.0/24" in str(refused.value)


def test_the_old_switch_that_opened_everything_is_refused_naming_its_replacement(
    environment: pytest.MonkeyPatch,
) -> None:
    environment.setenv("POKNA_WEBHOOK_ALLOW_PRIVATE_ADDRESSES", "true")
    with pytest.raises(SettingsError) as refused:
        get_settings()
    message = str(refused.value)
    assert message.startswith("POKNA_WEBHOOK_ALLOW_PRIVATE_ADDRESSES='true' is not valid")
    assert "POKNA_WEBHOOK_ALLOWED_PRIVATE_NETWORKS=10.0.0.0/8" in message
    environment.setenv("POKNA_WEBHOOK_ALLOW_PRIVATE_ADDRESSES", "false")
    assert get_settings().webhook_allowed_private_networks == ()


@pytest.fixture
def production(tmp_path: Path, database_url: str, engine: Engine) -> Iterator[TestClient]:
    settings = Settings(
        env=Environment.PRODUCTION,
        data_dir=tmp_path / "production",
        database_url=database_url,
        signing_key=private_key_to_pem(generate_signing_key()).decode(),
        seed_encryption_key="ab" * 32,
        webhook_allowed_private_networks="0.0.0.0/0",
    )
    runtime = Runtime.from_settings(settings)
    with TestClient(create_app(settings, runtime), raise_server_exceptions=False) as client:
        yield client


def test_an_endpoint_may_be_on_a_listed_network_but_never_on_the_metadata_service(
    production: TestClient, sessions: sessionmaker[Session]
) -> None:
    tenant = new_tenant(production, sessions)
    made = tenant.post(
        "/v1/webhooks/endpoints", {"url": "https://10.1.2.3/hooks", "event_types": ["game.turn"]}
    )
    assert made.status_code == 201, made.text
    for url in ("https://169.254.169.254/latest/meta-data", "https://127.0.0.1/hooks", "https://[::1]/hooks"):
        refused = tenant.post("/v1/webhooks/endpoints", {"url": url, "event_types": ["game.turn"]})
        assert_names_field(assert_problem(refused, 422, "unsafe_webhook_url"), "body.url")
    assert [endpoint["url"] for endpoint in tenant.get("/v1/webhooks/endpoints").json()["data"]] == [
        "https://10.1.2.3/hooks"
    ]
