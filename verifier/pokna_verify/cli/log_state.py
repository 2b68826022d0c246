"""The witness's state file: the last checkpoint it accepted of each log, by origin, as served (signed).

JSON, `{"logs": {origin: {"checkpoint": note}}}`, so one file can watch several logs and a player's
verification can add the checkpoint its game was proven in. Written whole to a temporary file and renamed
over the old one: a crash mid-write leaves the previous state, never half of one.
"""

from __future__ import annotations

import json
import os
import tempfile
from contextlib import suppress
from pathlib import Path

from pokna_verify.bounded_input import InputLimitError, loads
from pokna_verify.cli.input_files import UnusableInputError, read_document
from pokna_verify.tlog.checkpoint import Checkpoint, parse_checkpoint
from pokna_verify.tlog.errors import LogError, SignatureError
from pokna_verify.tlog.note import open_note


def read_state(path: Path) -> dict[str, str]:
    """origin -> the kept checkpoint's signed note; nothing kept if the file does not exist yet."""
    if not path.exists():
        return {}
    data = read_document(path, "state")
    try:
        document = loads(data.decode("utf-8"))
        logs = document["logs"]
        kept = {origin: entry["checkpoint"] for origin, entry in logs.items()}
    except InputLimitError as error:
        raise UnusableInputError(f"the state file {path}: {error}") from None
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise UnusableInputError(f"the state file {path} is not a witness's state ({error!r})") from error
    if not all(isinstance(origin, str) and isinstance(note, str) for origin, note in kept.items()):
        raise UnusableInputError(f"the state file {path} is not a witness's state")
    return kept


def kept_checkpoint(notes: dict[str, str], origin: str, path: Path) -> Checkpoint | None:
    note = notes.get(origin)
    if note is None:
        return None
    try:
        return unsigned_checkpoint(note)
    except LogError as error:
        raise UnusableInputError(
            f"the state file {path} keeps an unreadable checkpoint of {origin}: {error}"
        ) from error


def write_state(path: Path, notes: dict[str, str]) -> None:
    document = {"logs": {origin: {"checkpoint": note} for origin, note in sorted(notes.items())}}
    directory = path.parent if str(path.parent) else Path(".")
    try:
        descriptor, temporary = tempfile.mkstemp(dir=directory, prefix=f".{path.name}.")
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            json.dump(document, handle, indent=2)
            handle.write("\n")
        os.replace(temporary, path)
    except OSError as error:
        raise UnusableInputError(f"cannot write the state file {path}: {error.strerror or error}") from error


def unsigned_checkpoint(note: str) -> Checkpoint:
    """The checkpoint a signed note holds, read as a signed one is but its signatures not checked: one
    checked when it was kept, or one there is no key at hand for."""
    with suppress(SignatureError):  # well formed: no key to check a signature with is all that is missing
        open_note(note, [])
    return parse_checkpoint(note.rpartition("\n\n")[0] + "\n")
