"""A drand relay on 127.0.0.1 for tests: drand's HTTP API, signing with a test key of quicknet's scheme.

It serves `/{chain_hash}/info`, `/{chain_hash}/public/latest`, `/{chain_hash}/public/{round}` and the
un-prefixed default-chain forms (`/info`, `/public/...`) exactly as a relay does, readable from any origin,
with rounds signed on the fly: a BLS signature on G1 (RFC 9380, drand's DST) of sha256(round, 8 bytes
big-endian) under a test key, randomness = sha256(signature). The chain's genesis is put a little in the
past so rounds exist at once.

The clock is the real one plus an offset a test moves (`advance`), so a round can be made to arrive without
waiting a real period; `stop_publishing` freezes the chain at its latest round (an outage: later rounds are
404, `latest` never moves). The server runs for at most `lifetime_seconds` and stops by itself.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from py_arkworks_bls12381 import G1Point, G2Point, Scalar

from pokna_verify.fairness.beacon import SCHEME, SIGNATURE_DST, BeaconChain, BeaconRound, round_message

# A fixed test secret (any integer below the group order): deterministic, so failures reproduce.
TEST_SECRET = 0x2B7E151628AED2A6ABF7158809CF4F3C762E7160F38B4DA56A784D9045190CFE


@dataclass(frozen=True)
class BeaconKey:
    """A drand-style signer: public key on G2, signatures on G1, as quicknet."""

    secret: int = TEST_SECRET

    @property
    def public_key(self) -> str:
        return (G2Point() * Scalar(self.secret)).to_compressed_bytes().hex()

    def sign(self, round_number: int) -> BeaconRound:
        hashed = G1Point.hash_to_curve(round_message(round_number), SIGNATURE_DST)
        signature = (hashed * Scalar(self.secret)).to_compressed_bytes()
        return BeaconRound(round_number, hashlib.sha256(signature).hexdigest(), signature.hex())

    def chain(self, genesis_time: int, period: int) -> BeaconChain:
        chain_hash = hashlib.sha256(
            f"test-chain:{self.public_key}:{genesis_time}:{period}".encode()
        ).hexdigest()
        return BeaconChain(SCHEME, chain_hash, self.public_key, genesis_time, period)


@dataclass
class BeaconRelay:
    """The state behind one test relay; its methods are what a test steers."""

    key: BeaconKey
    chain: BeaconChain
    url: str = ""
    offset_ms: int = 0
    frozen_at_round: int | None = None
    paused_at_ms: int | None = None
    paths: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def now_ms(self) -> int:
        with self.lock:
            now = time.time_ns() // 1_000_000 if self.paused_at_ms is None else self.paused_at_ms
            return now + self.offset_ms

    def pause_clock(self) -> None:
        """From now on the relay's clock moves only by `advance`: a test that reads it twice sees the same
        instant however slowly the machine runs."""
        with self.lock:
            self.paused_at_ms = time.time_ns() // 1_000_000

    def advance(self, seconds: float) -> None:
        """Move the relay's clock forward: rounds due by then are published at once."""
        with self.lock:
            self.offset_ms += int(seconds * 1000)

    def stop_publishing(self) -> None:
        """An outage: the chain stays at its latest round from now on."""
        latest = self.latest_round()
        with self.lock:
            self.frozen_at_round = latest

    def resume_publishing(self) -> None:
        """The outage ends: every round due by now is served again."""
        with self.lock:
            self.frozen_at_round = None

    def latest_round(self) -> int:
        since_genesis = self.now_ms() - self.chain.genesis_time * 1000
        latest = since_genesis // (self.chain.period * 1000) + 1 if since_genesis >= 0 else 0
        with self.lock:
            frozen = self.frozen_at_round
        return latest if frozen is None else min(latest, frozen)

    def info(self) -> dict[str, object]:
        """drand's v1 /info document."""
        return {
            "public_key": self.chain.public_key,
            "period": self.chain.period,
            "genesis_time": self.chain.genesis_time,
            "hash": self.chain.chain_hash,
            "groupHash": hashlib.sha256(self.chain.public_key.encode()).hexdigest(),
            "schemeID": self.chain.scheme,
            "metadata": {"beaconID": "pokna-test"},
        }


_PATH = re.compile(r"^(?:/(?P<chain>[0-9a-f]{64}))?/(?P<what>info|public/latest|public/(?P<round>\d+))/?$")


def _handler(relay: BeaconRelay) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            with relay.lock:
                relay.paths.append(self.path)
            match = _PATH.match(self.path.split("?")[0])
            if match is None or match["chain"] not in (None, relay.chain.chain_hash):
                self._send(404, {"error": "not found"})
                return
            if match["what"] == "info":
                self._send(200, relay.info())
                return
            latest = relay.latest_round()
            wanted = latest if match["round"] is None else int(match["round"])
            if wanted < 1 or wanted > latest:
                self._send(404, {"error": f"round {wanted} is not published yet"})
                return
            self._send(200, relay.key.sign(wanted).to_json())

        def _send(self, status: int, body: object) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            # As drand's own HTTP server does on every answer, errors included (drand/drand http/server.go,
            # withCommonHeaders): any site's page may read a relay, the verifier page at its own origin too.
            self.send_header("Access-Control-Allow-Origin", "*")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Handler


@contextmanager
def beacon_relay(
    *,
    period: int = 1,
    rounds_before_now: int = 5,
    key: BeaconKey | None = None,
    lifetime_seconds: float = 120,
) -> Iterator[BeaconRelay]:
    """A relay on 127.0.0.1 whose chain started `rounds_before_now` periods ago."""
    key = key or BeaconKey()
    genesis = int(time.time()) - rounds_before_now * period
    relay = BeaconRelay(key, key.chain(genesis, period))
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(relay))
    server.daemon_threads = True
    relay.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    # Bounded: a test that forgets to leave the block still gets its relay stopped.
    stopper = threading.Timer(lifetime_seconds, server.shutdown)
    stopper.daemon = True
    stopper.start()
    try:
        yield relay
    finally:
        stopper.cancel()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
