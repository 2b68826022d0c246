"""No Docker engine runs here, so the Compose file is checked against the Compose specification schema
(tests/fixtures/compose_spec.json, from the compose-spec project, Apache-2.0) and for the ordering we need."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import yaml

ROOT = Path(__file__).resolve().parents[1]


def _compose() -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    return document


def test_compose_file_matches_the_compose_specification() -> None:
    schema = json.loads((ROOT / "tests" / "fixtures" / "compose_spec.json").read_text())
    jsonschema.Draft201909Validator(schema).validate(_compose())


def test_compose_spec_schema_rejects_a_broken_file() -> None:
    schema = json.loads((ROOT / "tests" / "fixtures" / "compose_spec.json").read_text())
    broken = _compose()
    broken["services"]["api"]["depends_on"] = {"postgres": {"condition": "whenever"}}
    try:
        jsonschema.Draft201909Validator(schema).validate(broken)
    except jsonschema.ValidationError:
        return
    raise AssertionError("the schema accepted an invalid depends_on condition")


def test_api_waits_for_healthy_postgres_and_finished_migrations() -> None:
    services = _compose()["services"]
    assert "healthcheck" in services["postgres"]
    assert services["api"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert services["api"]["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    assert services["migrate"]["command"] == ["pokna", "db", "upgrade"]
    assert "--no-migrate" in services["api"]["command"]


def test_data_lives_on_named_volumes() -> None:
    compose = _compose()
    named = set(compose["volumes"])
    mounts = compose["services"]["postgres"]["volumes"] + compose["services"]["api"]["volumes"]
    assert {mount.split(":")[0] for mount in mounts} <= named


def test_dockerfile_installs_from_the_pinned_constraints() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "-c constraints.txt" in dockerfile
    assert "COPY migrations" in dockerfile
