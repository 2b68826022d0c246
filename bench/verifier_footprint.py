"""What a player or an auditor installs to check Pokna's files, against what running the service installs.

    .venv/bin/python bench/verifier_footprint.py [--runs 9]

- the `pokna-verify` wheel's size (`pip wheel --no-deps ./verifier`);
- the installed size of each, dependencies included, each in a fresh virtual environment: `pip install
  ./verifier` alone, and `pip install ./verifier .` (the service, as the Makefile installs it), less what an
  empty environment already holds (pip, setuptools);
- start-up to a verdict: verifying one proof (tests/fairness/fairness_samples.py's, with its key ring and
  receipt: VALID, exit 0), `pokna-verify proof FILE` from the first environment against `pokna verify FILE`
  from the second, each a whole process, alternating, the median of --runs after one warm-up: wall seconds,
  and CPU seconds (user + system) as the kernel accounts for the finished process.

Everything is built from a copy of the working tree in a temporary directory (so nothing is written into
it) and removed afterwards. The installs need PyPI, as they do for anyone (pip's cache makes reruns quick).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "fairness"))

from fairness_samples import KEY_RING, sample_proof, sample_receipt  # noqa: E402

SKIPPED = shutil.ignore_patterns("__pycache__", "build", "*.egg-info", "*.pyc")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--runs", type=int, default=9, help="Counted runs of each command (after one warm-up)."
    )
    parser.add_argument(
        "--keep",
        type=Path,
        metavar="DIR",
        help="Build in DIR (new or empty) and leave it: the two environments, to time them again by hand.",
    )
    options = parser.parse_args()
    if options.keep is not None:
        options.keep.mkdir(parents=True, exist_ok=True)
        assert not any(options.keep.iterdir()), f"{options.keep} is not empty"
        _measure(options.keep, options.runs)
        return
    with tempfile.TemporaryDirectory(prefix="verifier-footprint-") as scratch:
        _measure(Path(scratch), options.runs)


def _measure(work: Path, runs: int) -> None:
    tree = _copy_of_the_tree(work / "tree")
    wheel = _wheel(tree / "verifier", work / "wheel")
    empty = _environment(work / "empty")
    verifier = _environment(work / "verifier", tree / "verifier")
    service = _environment(work / "service", tree / "verifier", tree)
    baseline = _installed_bytes(empty)
    files = _proof_files(work)
    times = _start_up(
        [str(verifier / "bin" / "pokna-verify"), "proof", *files],
        [str(service / "bin" / "pokna"), "verify", *files],
        runs,
    )
    print(f"wheel {wheel.name}: {wheel.stat().st_size / 1024:.1f} KiB")
    for name, venv in (("pokna-verify", verifier), ("pokna + pokna-verify", service)):
        size = (_installed_bytes(venv) - baseline) / 2**20
        print(
            f"installed {name}: {size:.1f} MiB in {_distributions(venv)} distributions (pip, setuptools aside)"
        )
    for name, taken in times.items():
        for figure, seconds in (("wall", [wall for wall, _ in taken]), ("cpu", [cpu for _, cpu in taken])):
            print(
                f"{name}: {figure} median {statistics.median(seconds):.3f} s "
                f"(min {min(seconds):.3f}, max {max(seconds):.3f}, {len(seconds)} runs)"
            )


def _copy_of_the_tree(target: Path) -> Path:
    """What the two builds read: the service's pyproject, README and package, and the verifier."""
    target.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, target / name)
    for name in ("service", "verifier"):
        shutil.copytree(ROOT / name, target / name, ignore=SKIPPED)
    return target


def _pip(python: Path, *argv: str | Path) -> None:
    subprocess.run(
        [str(python), "-m", "pip", "--disable-pip-version-check", "--no-input", "-q", *map(str, argv)],
        check=True,
        timeout=1200,
        env=_clean_environment(),
    )


def _wheel(source: Path, target: Path) -> Path:
    _pip(Path(sys.executable), "wheel", "--no-deps", "-w", target, source)
    [wheel] = target.glob("pokna_verify-*.whl")
    return wheel


def _environment(venv: Path, *sources: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    if sources:
        _pip(venv / "bin" / "python", "install", *sources)
    return venv


def _site_packages(venv: Path) -> Path:
    [found] = (venv / "lib").glob("python3*/site-packages")
    return found


def _installed_bytes(venv: Path) -> int:
    return sum(path.stat().st_size for path in _site_packages(venv).rglob("*") if path.is_file())


def _distributions(venv: Path) -> int:
    names = {path.name.split("-")[0].lower() for path in _site_packages(venv).glob("*.dist-info")}
    return len(names - {"pip", "setuptools"})


def _proof_files(work: Path) -> list[str]:
    files = {"proof.json": sample_proof(), "keys.json": KEY_RING.to_json(), "receipt.json": sample_receipt()}
    for name, document in files.items():
        (work / name).write_text(json.dumps(document))
    return [
        str(work / "proof.json"),
        "--keys",
        str(work / "keys.json"),
        "--receipt",
        str(work / "receipt.json"),
    ]


def _clean_environment() -> dict[str, str]:
    """Nothing of this checkout on the path: each environment runs what it installed."""
    return {name: value for name, value in os.environ.items() if name not in {"PYTHONPATH", "VIRTUAL_ENV"}}


def _start_up(verifier: list[str], service: list[str], runs: int) -> dict[str, list[tuple[float, float]]]:
    """(wall, CPU) seconds of each counted run: wall from the parent's clock, CPU (user + system) from the
    kernel's accounting of the finished child, which a busy machine disturbs far less."""
    times: dict[str, list[tuple[float, float]]] = {"pokna-verify proof": [], "pokna verify": []}
    for counted in (False, *([True] * runs)):
        for name, argv in (("pokna-verify proof", verifier), ("pokna verify", service)):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.perf_counter()
            finished = subprocess.run(argv, capture_output=True, env=_clean_environment(), check=False)
            wall = time.perf_counter() - started
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
            assert finished.returncode == 0, (argv, finished.stdout, finished.stderr)
            if counted:
                times[name].append((wall, cpu))
    return times


if __name__ == "__main__":
    main()
