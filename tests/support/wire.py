"""Round trips to PostgreSQL, counted on the wire: a TCP proxy on loopback between a client and the server.

A round trip is the client speaking after the server last spoke (or first), whatever the driver and
however many statements the client sends before it waits (psycopg's pipelines send several). Used by
tests/api/test_round_trips.py and bench/round_trips.py.
"""

from __future__ import annotations

import socket
import threading
from contextlib import suppress


class WireTurns:
    """A TCP proxy to the database that counts round trips: each time a client connection sends after the
    server last sent to it (a new request after an answer), one more."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self.turns = 0
        self._target = (target_host, target_port)
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def take(self) -> int:
        with self._lock:
            taken, self.turns = self.turns, 0
        return taken

    def close(self) -> None:
        """Stop accepting; connections already made end when their client or server closes them."""
        self._listener.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(self._target)
            for sock in (client, server):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            state = {"server_spoke": True}
            threading.Thread(target=self._pipe, args=(client, server, state, True), daemon=True).start()
            threading.Thread(target=self._pipe, args=(server, client, state, False), daemon=True).start()

    def _pipe(
        self, source: socket.socket, sink: socket.socket, state: dict[str, bool], upstream: bool
    ) -> None:
        try:
            while data := source.recv(65536):
                with self._lock:
                    if upstream and state["server_spoke"]:
                        self.turns += 1
                    state["server_spoke"] = not upstream
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                with suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
