"""The file `pokna-verify audit` reads (and `pokna audit verify`, `pokna audit report`): a path or stdin, its
first line read to know what it is, then the whole of it again from the start, even from a pipe. Every line
is read within pokna_verify.bounded_input.MAX_LINE_BYTES; a file may hold any number of them."""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

from pokna_verify.bounded_input import next_line
from pokna_verify.cli.input_files import UnusableInputError
from pokna_verify.cli.progress import StderrProgress


@contextmanager
def open_source(path: Path) -> Iterator[Any]:
    if str(path) == "-":
        yield sys.stdin.buffer
        return
    try:
        handle = path.open("rb")
    except OSError as error:
        raise UnusableInputError(f"cannot read the export {path}: {error.strerror or error}") from error
    with handle:
        yield handle


def named(path: Path) -> str:
    return "stdin" if str(path) == "-" else str(path)


def first_line(stream: BinaryIO) -> bytes:
    return next_line(stream, 1)


def rewound(stream: BinaryIO, first: bytes) -> BinaryIO:
    if stream.seekable():
        stream.seek(0)
        return stream
    return io.BufferedReader(_Prepended(first, stream))


class _Prepended(io.RawIOBase):
    """A pipe whose first line was already read, with that line put back in front."""

    def __init__(self, first: bytes, rest: BinaryIO) -> None:
        self._first, self._rest = first, rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self._first:
            size = min(len(buffer), len(self._first))
            buffer[:size], self._first = self._first[:size], self._first[size:]
            return size
        chunk = self._rest.read(len(buffer))
        buffer[: len(chunk)] = chunk
        return len(chunk)

    def fileno(self) -> int:
        raise OSError("a pipe")


class ProgressReader:
    """The export as the verifier reads it, saying on stderr how far it has got."""

    def __init__(self, stream: BinaryIO, shown: StderrProgress) -> None:
        self._stream = stream
        self._shown = shown
        self._read = 0

    def _count(self, data: bytes) -> bytes:
        self._read += len(data)
        self._shown.show(f"{self._read >> 20:,} MiB read")
        return data

    def read(self, size: int = -1) -> bytes:
        return self._count(self._stream.read(size))

    def readline(self, size: int = -1) -> bytes:
        return self._count(self._stream.readline(size))

    def fileno(self) -> int:
        return self._stream.fileno()

    def seekable(self) -> bool:
        return self._stream.seekable()

    def tell(self) -> int:
        return self._stream.tell()
