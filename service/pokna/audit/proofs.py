"""Every game's proof checked as pokna.fairness checks it (commitment, client seeds, rolls, signature,
rules replay), here or, for a large bundle, in worker processes: the rolls are most of the work and each
proof needs nothing but itself and the key ring. At most a few batches per worker are in flight, so
memory stays flat however many games a bundle holds.
"""

from __future__ import annotations

import multiprocessing
import signal
from collections import deque
from collections.abc import Iterator, Mapping
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any

from pokna.fairness.errors import FairnessError
from pokna.fairness.keyring import KeyRing
from pokna.fairness.proof_replay import replay_proof
from pokna.fairness.verification import CheckStatus, verify_proof

_BATCH = 32


@dataclass(frozen=True)
class ProofVerdict:
    line: int
    game_id: str
    problems: tuple[str, ...]
    rolls: int


def proof_problems(document: Mapping[str, Any], keys: KeyRing | None) -> tuple[tuple[str, ...], int]:
    """Each failed check as "name: what failed", and the number of rolls recomputed."""
    try:
        report = verify_proof(document, keys, replay=replay_proof)
    except (FairnessError, ValueError, TypeError) as error:
        return (f"not a proof: {error}",), 0
    problems = [f"{check.name}: {check.message}" for check in report.failed]
    if keys is None:
        problems.append("signature: no key ring to check it with")
    rolls = document.get("rolls")
    ran = report.check("rolls").status is CheckStatus.PASS
    return tuple(problems), len(rolls) if ran and isinstance(rolls, list) else 0


_worker_keys: KeyRing | None = None


def _start_worker(keys_json: Mapping[str, Any] | None) -> None:
    global _worker_keys
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _worker_keys = KeyRing.from_json(keys_json) if keys_json is not None else None


def _check_batch(batch: list[tuple[int, str, Mapping[str, Any]]]) -> list[ProofVerdict]:
    return [
        ProofVerdict(line, game_id, *proof_problems(document, _worker_keys))
        for line, game_id, document in batch
    ]


class ProofChecker:
    """Takes proofs in bundle order and gives back their verdicts in the same order."""

    def __init__(self, keys: KeyRing | None, processes: int) -> None:
        self.keys = keys
        self.processes = processes
        self._pool: ProcessPoolExecutor | None = None
        self._batch: list[tuple[int, str, Mapping[str, Any]]] = []
        self._in_flight: deque[tuple[list[tuple[int, str, Mapping[str, Any]]], Future[list[ProofVerdict]]]]
        self._in_flight = deque()
        self._ready: list[ProofVerdict] = []

    def submit(self, line: int, game_id: str, document: Mapping[str, Any]) -> None:
        if self.processes < 2:
            self._ready.append(ProofVerdict(line, game_id, *proof_problems(document, self.keys)))
            return
        self._batch.append((line, game_id, document))
        if len(self._batch) >= _BATCH:
            self._send()

    def ready(self) -> Iterator[ProofVerdict]:
        """The verdicts settled so far (waiting only when too many batches are in flight)."""
        while len(self._in_flight) > 2 * self.processes:
            self._settle()
        yield from self._ready
        self._ready.clear()

    def finish(self) -> Iterator[ProofVerdict]:
        if self._batch:
            self._send()
        while self._in_flight:
            self._settle()
        self.close()
        yield from self._ready
        self._ready.clear()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def _send(self) -> None:
        batch, self._batch = self._batch, []
        if self._pool is None:
            keys_json = self.keys.to_json() if self.keys is not None else None
            self._pool = ProcessPoolExecutor(
                self.processes, mp_context=_context(), initializer=_start_worker, initargs=(keys_json,)
            )
        self._in_flight.append((batch, self._pool.submit(_check_batch, batch)))

    def _settle(self) -> None:
        batch, future = self._in_flight.popleft()
        try:
            self._ready += future.result()
        except BrokenProcessPool:  # a worker died: check this batch here, nothing is lost but time
            self._ready += [
                ProofVerdict(line, game_id, *proof_problems(document, self.keys))
                for line, game_id, document in batch
            ]


def _context() -> Any:
    if "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context()
