"""Run `pokna serve` as a real process, as a user would, and wait until it answers."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def running_server(env: dict[str, str], data_dir: Path, *extra: str) -> Iterator[str]:
    with running_server_process(env, data_dir, *extra) as (base, _):
        yield base


@contextmanager
def running_server_process(
    env: dict[str, str], data_dir: Path, *extra: str
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """`running_server`, also handing over the `pokna serve` process (its workers are its children)."""
    port = free_port()
    environment = {**os.environ, **env, "POKNA_DATA_DIR": str(data_dir)}
    pokna = Path(sys.executable).with_name("pokna")
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    log_path = data_dir.parent / f"serve-{port}.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [str(pokna), "serve", "--port", str(port), *extra], env=environment, stdout=log, stderr=log
        )
        base = f"http://127.0.0.1:{port}"
        try:
            _wait_until_up(base, process, log_path)
            yield base, process
        finally:
            process.terminate()
            process.wait(timeout=20)


def _wait_until_up(base: str, process: subprocess.Popen[bytes], log_path: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"pokna serve exited with {process.returncode}:\n{log_path.read_text()}")
        try:
            with urllib.request.urlopen(f"{base}/healthz", timeout=2):
                return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.2)
    raise RuntimeError(f"pokna serve did not answer within 60 s:\n{log_path.read_text()}")
