"""The README's "A complete game with curl", run as it is written (bash, curl and the CLI) against a real
`pokna serve`: every check it runs ends in VALID, no request in it is refused, each answer is on its own
line, and it writes nothing into the repository's folder, from which it is typed."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from support.servers import serving

ROOT = Path(__file__).resolve().parents[1]
README_BASE = "B=http://127.0.0.1:8000"


def _walkthrough() -> str:
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## A complete game with curl") :]
    script = re.search(r"```sh\n(.*?)```", section, flags=re.DOTALL)
    assert script is not None
    return script.group(1)


@pytest.mark.citus
def test_the_walkthrough_runs_as_written(database_url: str, tmp_path: Path) -> None:
    script = _walkthrough()
    assert README_BASE in script
    assert shutil.which("curl") is not None, "the walkthrough is typed with curl: install it"
    env = {**os.environ, "POKNA_DATABASE_URL": database_url, "POKNA_DATA_DIR": str(tmp_path / "data")}
    before = set(os.listdir(ROOT))
    with serving({"POKNA_DATABASE_URL": database_url}, tmp_path / "data") as server:
        ran = subprocess.run(
            ["bash", "-c", script.replace(README_BASE, f"B={server.base}")],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    assert ran.returncode == 0, ran.stderr
    output = ran.stdout
    assert [line for line in output.splitlines() if line.endswith("VALID")] == ["VALID"] * 3, output
    assert "problems/" not in output, output  # no request of the walkthrough was refused
    assert "}{" not in output, output  # two answers never run together on one line
    assert set(os.listdir(ROOT)) == before  # its files went to the scratch folder
