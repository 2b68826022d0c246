"""`pokna serve`: migrate the database, then run the API under uvicorn."""

from __future__ import annotations

import errno
import logging
import signal
import socket
from contextlib import ExitStack
from pathlib import Path
from typing import Annotated

import typer
import uvicorn
from uvicorn.supervisors import Multiprocess

from pokna.cli.app import app
from pokna.cli.database_errors import redacted
from pokna.cli.errors import CommandError
from pokna.db import embedded, first_statistics, migrate
from pokna.db.backend import conninfo_of
from pokna.logs import configure_logging
from pokna.metrics import shared_by_workers
from pokna.service_keys import load_service_keys
from pokna.settings import Settings, get_settings
from pokna.supervision import supervising

log = logging.getLogger("pokna.serve")

HTTP_PROTOCOL = "pokna.api.http_protocol:ProblemHttpToolsProtocol"
"""uvicorn's httptools protocol (llhttp, in C), refusing what it cannot parse with problem+json; named by its
path, as the command may not import the API (docs/architecture.md). The benchmarks serve the product with it."""


@app.command()
def serve(
    host: Annotated[str | None, typer.Option(help="Interface to bind (default POKNA_HOST).")] = None,
    port: Annotated[
        int | None, typer.Option(min=1, max=65535, help="Port to bind (default POKNA_PORT).")
    ] = None,
    workers: Annotated[int | None, typer.Option(help="Worker processes (default POKNA_WORKERS).")] = None,
    migrate_first: Annotated[
        bool, typer.Option("--migrate/--no-migrate", help="Apply pending migrations before serving.")
    ] = True,
) -> None:
    """Run the Pokna API. Every worker is stateless; scale out by running more of them on one database."""
    settings = get_settings()
    configure_logging(settings.log_level)
    host = host or settings.host
    port = port or settings.port
    sock = _bind(host, port)  # before anything slow: a taken port is the commonest mistake
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    with ExitStack() as on_exit:
        if settings.embedded_database:
            url = _embedded_database(on_exit, settings.data_dir, settings.postgres_bindir)
            where = f"embedded PostgreSQL in {settings.data_dir / 'postgres'}"
        else:
            url = str(settings.database_url)
            where = redacted(url)
        if migrate_first:
            migrate.upgrade(url)
        # A fresh database's tables get statistics as soon as they hold rows (the module says why).
        on_exit.enter_context(first_statistics.watching(conninfo_of(url)))
        load_service_keys(
            settings
        )  # fail fast on bad keys; in development, make them once, before any worker
        typer.echo(f"Pokna is serving on http://{host}:{port}  (database: {where})", err=True)
        _serve(settings, host, port, workers, sock)


def _embedded_database(on_exit: ExitStack, data_dir: Path, bindir: Path | None) -> str:
    """The data directory's private PostgreSQL, held for this server: a second `pokna serve` on the same
    directory is refused by name. Stopped on exit if this server started it; one that was running already
    (started by another command) is left running."""
    on_exit.enter_context(embedded.serving_from(data_dir))
    cluster = embedded.cluster_of(data_dir, bindir)
    if cluster.ensure_running():
        on_exit.callback(cluster.stop)
        # uvicorn shuts down gracefully on SIGTERM, then raises the signal again once it has: by default
        # that ends the process on the spot, before the cluster could be stopped. As an exit instead, it
        # unwinds through `on_exit`.
        signal.signal(signal.SIGTERM, _exit_on_sigterm)
    return cluster.url


def _exit_on_sigterm(signum: int, _frame: object) -> None:
    raise SystemExit(0)


def _serve(settings: Settings, host: str, port: int, workers: int | None, sock: socket.socket) -> None:
    config = uvicorn.Config(
        "pokna.app.asgi:create_app",
        factory=True,
        host=host,
        port=port,
        workers=workers or settings.workers,
        log_config=None,
        access_log=False,
        # uvicorn answers a request it cannot parse itself; this protocol makes that answer problem+json.
        # The event loop is uvloop ("auto" picks it: it is a dependency), as the parser is httptools.
        http=HTTP_PROTOCOL,
        ws="none",
        # uvicorn's supervisor kills a worker that does not answer its ping within this many seconds (5 by
        # default): on a busy 2-core machine a starting worker, still importing the app, missed it and was
        # killed and restarted over and over (tests/cli/test_serve.py flaked at load ~10).
        timeout_worker_healthcheck=30,
        # A request still running this long after SIGTERM is cancelled, so a stuck one cannot hold the
        # shutdown (and the deploy behind it) for ever.
        timeout_graceful_shutdown=settings.shutdown_timeout_seconds,
    )
    with shared_by_workers(config.workers):  # before any worker starts: they read it on import
        _run(config, sock)


def _run(config: uvicorn.Config, sock: socket.socket) -> None:
    if config.workers > 1:
        # uvicorn's multi-worker mode leaves Nagle on for accepted connections, so every keep-alive
        # response waits ~40 ms for the client's delayed ACK (bench/README.md). Linux passes the listening
        # socket's TCP_NODELAY on to the connections it accepts.
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with supervising():  # the workers end with this process, even one killed outright
            Multiprocess(config, sockets=[sock]).run()
    else:
        uvicorn.Server(config).run(sockets=[sock])


def _bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound here (as uvicorn's `Config.bind_socket` would) so that a taken port or
    a wrong host is one line naming the setting, not a log line after "serving"."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except (OSError, OverflowError) as error:
        sock.close()
        if isinstance(error, OSError) and error.errno == errno.EADDRINUSE:
            raise CommandError(
                f"port {port} on {host} is already in use", "choose another with --port or POKNA_PORT"
            ) from None
        raise CommandError(
            f"cannot listen on {host}:{port}: {getattr(error, 'strerror', None) or error}",
            "check --host/POKNA_HOST and --port/POKNA_PORT",
        ) from None
    sock.set_inheritable(True)
    return sock
