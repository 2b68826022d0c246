"""Prometheus's own `promtool`, which checks and unit-tests deploy/prometheus/'s rules.

Without it the tests skip loudly, and under CI=true they fail instead (`.ci/run` installs Debian's
`prometheus` package, which ships it)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

MISSING = (
    "!!! PROMETHEUS RULES NOT TESTED: no promtool binary (install it with `apt-get install -y prometheus` "
    "or set POKNA_PROMTOOL) !!!"
)


def promtool_path() -> str | None:
    return os.environ.get("POKNA_PROMTOOL") or shutil.which("promtool")


def promtool_binary() -> str:
    binary = promtool_path()
    if binary is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(MISSING)
        pytest.skip(MISSING)
    return binary


def run_promtool(binary: str, *args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """promtool's answer, never raising: a test reads its exit code and its words."""
    return subprocess.run(
        [binary, *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=120, check=False
    )
