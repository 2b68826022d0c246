"""`/metrics` scraped as Prometheus would, and parsed with prometheus-client's own parser."""

from __future__ import annotations

from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]

LOOPBACK = ("127.0.0.1", 50000)
"""`/metrics` answers loopback by default; the `client` fixture comes from "testclient"."""


def samples_of(text: str) -> Samples:
    found: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return found


def scrape(client: TestClient) -> Samples:
    response = TestClient(client.app, client=LOOPBACK).get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    return samples_of(response.text)


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def grew(before: Samples, after: Samples, name: str, **labels: str) -> float:
    return value(after, name, **labels) - value(before, name, **labels)
