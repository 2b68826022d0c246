"""A stand-in for a tenant's public log over HTTP on 127.0.0.1: the service's four log addresses and its key
ring, answering from whichever history the test sets, so a test can show two witnesses two histories, roll
one back, or corrupt a proof. Every tree, proof and signature is made by pokna_verify.tlog; nothing is mocked."""

from __future__ import annotations

import base64
import json
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from pokna_verify.fairness.keyring import KeyRing
from pokna_verify.tlog.checkpoint import Checkpoint, ledger_head_lines
from pokna_verify.tlog.hashing import leaf_hash
from pokna_verify.tlog.note import sign_note
from pokna_verify.tlog.tree import (
    Node,
    appended_nodes,
    consistency_ranges,
    inclusion_ranges,
    proof_hashes,
    root_hash,
)

TENANT = "tnt_standin"


def b64(value: bytes) -> str:
    return base64.b64encode(value).decode()


@dataclass
class History:
    """What the log shows: the leaves' entries, the size it admits to, and the books' heads it signs."""

    entries: list[bytes]
    size: int
    heads: dict[int, tuple[int, str]] = field(default_factory=dict)
    extra_lines: tuple[str, ...] = ()  # extension lines signed after the heads' lines, as written
    nodes: dict[Node, bytes] = field(init=False)

    def __post_init__(self) -> None:
        self.nodes = appended_nodes(0, self.entries, {})


@dataclass
class StandInLog:
    key: Ed25519PrivateKey
    history: History
    base: str = ""
    corrupt_proofs: bool = False
    origin_prefix: str = "standin.test/games"
    origin_tenant: str = TENANT  # the tenant its checkpoints name; another is a log signing as another's

    @property
    def url(self) -> str:
        return f"{self.base}/v1/logs/{TENANT}"

    @property
    def origin(self) -> str:
        return f"{self.origin_prefix}/{self.origin_tenant}"

    def checkpoint(self) -> str:
        history = self.history
        body = Checkpoint(
            self.origin,
            history.size,
            root_hash(history.size, history.nodes),
            (*ledger_head_lines(history.heads), *history.extra_lines),
        )
        return sign_note(body.to_text(), self.origin, self.key)

    def answer(self, raw_path: str, query: dict[str, list[str]]) -> tuple[int, str, str]:
        """`raw_path` as sent: decoded as the service decodes it, each segment on its own."""
        history = self.history
        path = urllib.parse.unquote(raw_path)
        if path == "/v1/fairness/keys":
            return 200, "application/json", json.dumps(KeyRing.of(self.key.public_key()).to_json())
        prefix = f"/v1/logs/{TENANT}"
        if path == f"{prefix}/checkpoint":
            return 200, "text/plain; charset=utf-8", self.checkpoint()
        if path == f"{prefix}/consistency":
            first, second = int(query["first"][0]), int(query["second"][0])
            if second > history.size or first > second:
                return 422, "application/problem+json", json.dumps({"detail": "bad sizes"})
            path_hashes = proof_hashes(consistency_ranges(first, second), history.nodes)
            if self.corrupt_proofs and path_hashes:
                path_hashes[0] = bytes(32)
            return 200, "application/json", json.dumps({"consistency_path": [b64(h) for h in path_hashes]})
        if path.startswith(f"{prefix}/games/") and path.endswith("/inclusion"):
            game_id = urllib.parse.unquote(raw_path.split("/")[-2])
            size = int(query.get("tree_size", [str(history.size)])[0])
            for index, entry in enumerate(history.entries[:size]):
                if json.loads(entry)["game_id"] == game_id:
                    hashes = proof_hashes(inclusion_ranges(index, size), history.nodes)
                    if self.corrupt_proofs and hashes:
                        hashes[0] = bytes(32)
                    body = {
                        "game_id": game_id,
                        "leaf_index": index,
                        "tree_size": size,
                        "entry": entry.decode(),
                        "leaf_hash": b64(leaf_hash(entry)),
                        "root_hash": b64(root_hash(size, history.nodes)),
                        "inclusion_path": [b64(h) for h in hashes],
                    }
                    return 200, "application/json", json.dumps(body)
            return 404, "application/problem+json", json.dumps({"detail": f"game {game_id} is not logged"})
        return 404, "application/problem+json", json.dumps({"detail": "no such address"})


@contextmanager
def serving(log: StandInLog) -> Iterator[StandInLog]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            parts = urllib.parse.urlsplit(self.path)
            status, media, body = log.answer(parts.path, urllib.parse.parse_qs(parts.query))
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", media)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *_: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    log.base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield log
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
