"""A real `pokna serve`'s stderr, read as an operator's log collector would: one JSON line per request
with its id, route template, status and duration; no second access line; no ANSI; no secret."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from support.servers import running_server

API_KEY_IN_QUERY = "pk_query_secret_d3adb33f"
API_KEY_IN_HEADER = "pk_header_secret_f00dcafe"


def _get(url: str, request_id: str, headers: dict[str, str] | None = None) -> int:
    request = urllib.request.Request(url, headers={"X-Request-ID": request_id, **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            status: int = response.status
    except urllib.error.HTTPError as error:
        status = error.code
    return status


@pytest.mark.parametrize("workers", ["1", "2"])
def test_one_plain_json_line_per_request_and_no_secret(
    tmp_path: Path, workers: str, database_url: str
) -> None:
    data_dir = tmp_path / "data"
    asked: dict[str, tuple[str, str, int]] = {}
    with running_server({"POKNA_DATABASE_URL": database_url}, data_dir, "--workers", workers) as base:
        port = base.rsplit(":", 1)[1]
        for number, (path, route, headers) in enumerate(
            [
                ("/healthz", "/healthz", None),
                (
                    "/v1/accounts/acct_han",
                    "/v1/accounts/{account_id}",
                    {"Authorization": f"Bearer {API_KEY_IN_HEADER}"},
                ),
                (f"/v1/accounts/acct_han?api_key={API_KEY_IN_QUERY}", "/v1/accounts/{account_id}", None),
                ("/no/such/path", "unmatched", None),
            ]
        ):
            request_id = f"log-test-{number}"
            asked[request_id] = ("GET", route, _get(f"{base}{path}", request_id, headers))
    log = (tmp_path / f"serve-{port}.log").read_text()

    assert "\x1b" not in log
    assert API_KEY_IN_QUERY not in log
    assert API_KEY_IN_HEADER not in log
    entries = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    assert entries, log
    for entry in entries:
        assert "color_message" not in entry, entry
        assert "\\u001b" not in json.dumps(entry), entry
    assert not [entry for entry in entries if entry["logger"] == "uvicorn.access"]

    access: dict[str, list[dict[str, Any]]] = {}
    for entry in entries:
        if entry["logger"] == "pokna.access" and entry.get("request_id") in asked:
            access.setdefault(entry["request_id"], []).append(entry)
    assert sorted(access) == sorted(asked)
    for request_id, (method, route, status) in asked.items():
        [line] = access[request_id]  # exactly one line per request
        assert (line["method"], line["route"], line["status"]) == (method, route, status)
        assert isinstance(line["duration_ms"], float | int)
        assert line["duration_ms"] >= 0
        assert "path" not in line
    assert [status for _, _, status in asked.values()] == [200, 401, 401, 404]
