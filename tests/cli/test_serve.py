"""`pokna serve` as a user runs it: a real process, migrating its own database, answering over HTTP."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

from pokna.db import migrate
from support.servers import running_server


def _get(url: str) -> tuple[int, dict[str, object]]:
    with urllib.request.urlopen(url, timeout=5) as response:
        return response.status, json.loads(response.read())


def test_serve_on_the_embedded_default_creates_and_migrates_sqlite(tmp_path: Path) -> None:
    data_dir = tmp_path / "fresh" / ".pokna"
    with running_server({"POKNA_DATABASE_URL": ""}, data_dir) as base:
        assert _get(f"{base}/healthz") == (200, {"status": "ok"})
        status, ready = _get(f"{base}/readyz")
    assert status == 200
    assert ready["database"] == "sqlite"
    assert ready["schema_revision"] == migrate.head_revision()
    assert (data_dir / "pokna.sqlite3").exists()


def test_serve_with_a_database_url_and_two_workers(
    empty_database_url: str, backend: str, tmp_path: Path
) -> None:
    with running_server(
        {"POKNA_DATABASE_URL": empty_database_url}, tmp_path / "data", "--workers", "2"
    ) as base:
        statuses = {_get(f"{base}/readyz")[1]["database"] for _ in range(6)}
    assert statuses == {backend}
