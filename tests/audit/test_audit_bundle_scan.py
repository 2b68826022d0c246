"""The bundle read on several processes (pokna_verify.bundle.scan) reports exactly what the one-process read
reports: the same findings, in the same order, with the same wording, for a real bundle (games played over
HTTP, both databases) and for every kind of tampering; from a file the workers read by offset, from a pipe,
and when a worker dies."""

from __future__ import annotations

import copy
import io
import os
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy.orm import Session, sessionmaker
from test_audit_bundle_tampering import _changed, _get, _leaves, _set

from pokna_verify.bundle import scan as bundle_scan
from pokna_verify.bundle.report import Verdict
from pokna_verify.bundle.scan import verify_bundle, verify_bundle_stream
from pokna_verify.fairness.keyring import KeyRing
from support.audit_bundles import lines_of, play_books, records

EXAMPLES = 25


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks of a few lines and a pool from the first block, so a test bundle spans many workers' blocks
    and every seam between them (a game's record in one block, its transactions in the next)."""
    monkeypatch.setattr(bundle_scan, "_BLOCK_BYTES", 1500)
    monkeypatch.setattr(bundle_scan, "_POOL_AFTER_BLOCKS", 1)


def _on_processes(lines: list[str], ring: KeyRing, tmp_path: Path) -> dict[str, Any]:
    bundle = tmp_path / "bundle.jsonl"
    bundle.write_text("".join(lines))
    with bundle.open("rb") as stream:
        return verify_bundle_stream(stream, keys=ring, processes=2).to_json()


def test_every_tampering_reads_the_same_on_two_processes(
    client: TestClient, sessions: sessionmaker[Session], tmp_path: Path, small_blocks: None
) -> None:
    books = play_books(client, sessions, games=4, rake={"bps": 1000, "cap": 2})
    lines = books.bundle()
    documents = records(lines)
    ring = books.key_ring
    valid = _on_processes(lines, ring, tmp_path)
    assert valid == verify_bundle(lines, keys=ring).to_json()
    assert valid["verdict"] == str(Verdict.VALID)
    assert valid["rolls"] > 0
    leaves = [(index, path) for index, document in enumerate(documents) for path in _leaves(document)]

    def same(changed: list[str]) -> None:
        one = verify_bundle(changed, keys=ring).to_json()
        assert one["verdict"] == str(Verdict.INVALID)
        assert _on_processes(changed, ring, tmp_path) == one

    @settings(max_examples=EXAMPLES, database=None, deadline=None)
    @given(st.sampled_from(leaves))
    def one_field_changed(leaf: tuple[int, tuple[Any, ...]]) -> None:
        index, path = leaf
        changed = copy.deepcopy(documents)
        _set(changed[index], path, _changed(_get(changed[index], path)))
        same(lines_of(changed))

    @settings(max_examples=EXAMPLES, database=None, deadline=None)
    @given(st.integers(0, len(lines) - 1), st.integers(0, len(lines) - 1))
    def two_records_swapped_or_one_dropped(first: int, second: int) -> None:
        changed = list(lines)
        if lines[first] == lines[second]:
            del changed[first]
        else:
            changed[first], changed[second] = changed[second], changed[first]
        same(changed)

    one_field_changed()
    two_records_swapped_or_one_dropped()
    same([*lines[:5], "not json\n", "\n", *lines[5:]])


def test_a_pipe_and_a_dying_worker_read_the_same(
    client: TestClient,
    sessions: sessionmaker[Session],
    tmp_path: Path,
    small_blocks: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    books = play_books(client, sessions, games=3)
    lines = books.bundle()
    expected = verify_bundle(lines, keys=books.key_ring).to_json()
    assert expected["verdict"] == str(Verdict.VALID)
    piped = io.BytesIO("".join(lines).encode())  # no file descriptor: the blocks are sent to the workers
    assert verify_bundle_stream(piped, keys=books.key_ring, processes=2).to_json() == expected

    monkeypatch.setattr(bundle_scan, "_read_file_block", _dies)
    assert _on_processes(lines, books.key_ring, tmp_path) == expected


def _dies(*_: object) -> None:
    """A worker killed while reading its block (module level: a task is sent to a worker by name)."""
    os._exit(1)
