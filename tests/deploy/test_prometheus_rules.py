"""deploy/prometheus/ checked by Prometheus's own promtool (`check rules`, `check config`, `test rules` on the
unit tests beside the rules), and held to the service: every metric a rule reads is on a real scrape of
the app, every alert has series that fire it and series that do not, and a runbook in
docs/operations.md. A rule broken on purpose fails promtool, so these checks can fail."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from pokna.api import metrics, metrics_backlog
from support.promtool import promtool_binary, run_promtool
from support.scrapes import LOOPBACK

ROOT = Path(__file__).resolve().parents[2]
PROMETHEUS = ROOT / "deploy" / "prometheus"
RULES = PROMETHEUS / "pokna.rules.yml"
UNIT_TESTS = sorted((PROMETHEUS / "tests").glob("*.yml"))
OPERATIONS = ROOT / "docs" / "operations.md"
RUNBOOK_SECTION = "## 11. Alerts"
TARGET_LABELS = {"job", "instance"}
"""Labels Prometheus adds to every scraped series: no exposition carries them."""


@pytest.fixture(scope="module")
def binary() -> str:
    return promtool_binary()


def _rules() -> list[dict[str, Any]]:
    document = yaml.safe_load(RULES.read_text())
    return [rule for group in document["groups"] for rule in group["rules"]]


def _alerts() -> dict[str, dict[str, Any]]:
    return {rule["alert"]: rule for rule in _rules() if "alert" in rule}


def _evaluations() -> list[dict[str, Any]]:
    return [
        evaluation
        for path in UNIT_TESTS
        for test in yaml.safe_load(path.read_text())["tests"]
        for evaluation in test.get("alert_rule_test", [])
    ]


def test_the_rules_and_the_scrape_configuration_pass_promtool_s_checks(binary: str) -> None:
    checked = run_promtool(binary, "check", "rules", RULES)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"SUCCESS: {len(_rules())} rules found" in checked.stdout
    config = run_promtool(binary, "check", "config", PROMETHEUS / "prometheus.yml")
    assert config.returncode == 0, config.stdout + config.stderr


def test_every_alert_passes_promtool_s_unit_tests(binary: str) -> None:
    assert UNIT_TESTS, f"no unit tests in {PROMETHEUS / 'tests'}"
    for path in UNIT_TESTS:
        tested = run_promtool(binary, "test", "rules", path.name, cwd=path.parent)
        assert tested.returncode == 0, tested.stdout + tested.stderr
        assert "SUCCESS" in tested.stdout


def test_every_alert_has_series_that_fire_it_and_series_that_do_not() -> None:
    evaluations = _evaluations()
    for name in _alerts():
        mine = [evaluation for evaluation in evaluations if evaluation["alertname"] == name]
        assert any(evaluation["exp_alerts"] for evaluation in mine), f"{name}: no unit test fires it"
        assert any(not evaluation["exp_alerts"] for evaluation in mine), (
            f"{name}: no unit test keeps it quiet"
        )
    unknown = {evaluation["alertname"] for evaluation in evaluations} - set(_alerts())
    assert not unknown, f"unit tests of alerts the rules do not have: {unknown}"


def test_every_alert_points_at_its_runbook() -> None:
    runbook = OPERATIONS.read_text().split(RUNBOOK_SECTION, 1)[1].split("\n## ", 1)[0]
    headings = set(re.findall(r"^### (\S+)$", runbook, re.MULTILINE))
    for name, alert in _alerts().items():
        assert alert["labels"]["severity"] in {"critical", "warning"}, name
        assert alert["annotations"]["summary"], name
        assert alert["annotations"]["runbook_url"] == f"docs/operations.md#{name.lower()}", name
        assert name in headings, f"docs/operations.md, {RUNBOOK_SECTION}: no runbook for {name}"
    assert headings == set(_alerts()), f"runbooks of no alert: {headings - set(_alerts())}"


CHECK, UNIT_TEST = "check rules", "test rules"
BREAKAGES: dict[str, tuple[str, str, str]] = {
    # what: (the rule's text, spoiled, the promtool command that must refuse it)
    "a broken expression": (
        "job_stage:pokna_webhook_backlog_oldest_seconds:max > 300",
        "job_stage:pokna_webhook_backlog_oldest_seconds:max > > 300",
        CHECK,
    ),
    "a wrong threshold": (
        "job:pokna_game_deadline_overdue_seconds:max > 300",
        "job:pokna_game_deadline_overdue_seconds:max > 3000",
        UNIT_TEST,
    ),
    "a metric renamed under the rules": (
        "max by (job) (pokna_ledger_unsigned_seconds)",
        "max by (job) (pokna_ledger_unsigned)",
        UNIT_TEST,
    ),
    "a sum where every process reads the same": (
        "max by (job, stage) (pokna_webhook_backlog)",
        "sum by (job, stage) (pokna_webhook_backlog)",
        UNIT_TEST,
    ),
    "a 503 counted as a server error": ('status=~"5..", status!="503"', 'status=~"5.."', UNIT_TEST),
    "the wrong runbook": (
        "runbook_url: docs/operations.md#poknawalletsheld",
        "runbook_url: docs/operations.md#poknabeaconrollsoverdue",
        UNIT_TEST,
    ),
}


@pytest.mark.parametrize("breakage", BREAKAGES, ids=list(BREAKAGES))
def test_a_broken_rule_fails_promtool(binary: str, tmp_path: Path, breakage: str) -> None:
    """A copy of deploy/prometheus/ with one rule spoiled: promtool must refuse it, the syntax by `check
    rules`, the meaning by the unit tests (which then are what catches it: `check rules` passes)."""
    found, spoiled, refused_by = BREAKAGES[breakage]
    copy = tmp_path / "prometheus"
    shutil.copytree(PROMETHEUS, copy)
    rules = (copy / RULES.name).read_text()
    assert rules.count(found) == 1, f"{breakage}: the rule to spoil is not in {RULES.name} once"
    (copy / RULES.name).write_text(rules.replace(found, spoiled))

    checked = run_promtool(binary, "check", "rules", copy / RULES.name)
    tested = [run_promtool(binary, "test", "rules", path.name, cwd=copy / "tests") for path in UNIT_TESTS]
    if refused_by == CHECK:
        assert checked.returncode != 0, f"promtool check rules accepted {breakage}"
        assert "parse error" in checked.stderr + checked.stdout
    else:
        assert checked.returncode == 0, checked.stdout + checked.stderr
        assert any(result.returncode != 0 for result in tested), f"the unit tests accepted {breakage}"


# --- the rules against a real scrape ------------------------------------------------------------------

_SELECTOR = re.compile(r"(?<![\w:])(pokna_[a-z0-9_]+)(?![\w:])(\{[^}]*\})?")
_MATCHER = re.compile(r"(\w+)\s*(?:=~|!~|!=|=)")
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring)\s*\(([^)]*)\)")


def _read_by_rules() -> dict[str, set[str]]:
    """Every metric a rule reads (recording rules' names, with a colon, aside), with the labels the rule
    selects it by or groups it by."""
    read: dict[str, set[str]] = {}
    for rule in _rules():
        expr = rule["expr"]
        grouped = {label.strip() for match in _GROUPING.findall(expr) for label in match.split(",")}
        names = _SELECTOR.findall(expr)
        for name, matchers in names:
            read.setdefault(name, set()).update(_MATCHER.findall(matchers))
        if names and grouped - TARGET_LABELS:
            # A grouping label must be on the metrics the expression reads (le on a histogram's buckets).
            for name, _ in names:
                read[name].update(grouped - TARGET_LABELS)
    return read


def test_every_metric_the_rules_read_is_on_a_real_scrape(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A metric renamed in the service, or a label dropped, fails here before an alert goes quietly blind."""
    monkeypatch.setattr(metrics, "SCRAPE_REUSE_SECONDS", 0.0, raising=False)
    monkeypatch.setattr(metrics_backlog, "BACKLOG_REUSE_SECONDS", 0.0, raising=False)
    assert (
        client.get("/v1/accounts/acct_x", headers={"Authorization": "Bearer pk_made_up"}).status_code == 401
    )
    scraped = TestClient(client.app, client=LOOPBACK).get("/metrics")
    assert scraped.status_code == 200
    labels_of: dict[str, set[str]] = {}
    for family in text_string_to_metric_families(scraped.text):
        for sample in family.samples:
            labels_of.setdefault(sample.name, set()).update(sample.labels)

    read = _read_by_rules()
    assert {"pokna_http_request_duration_seconds_count", "pokna_webhook_backlog"} <= set(read), read
    for name, labels in sorted(read.items()):
        assert name in labels_of, f"the rules read {name}, which /metrics does not have"
        assert labels <= labels_of[name], f"the rules read {name} by {labels - labels_of[name]}, not on it"
