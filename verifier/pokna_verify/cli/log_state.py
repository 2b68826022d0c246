"""The witness's state file: the last checkpoint it accepted of each log, by origin, as served (signed).

JSON, `{"logs": {origin: {"checkpoint": note}}}`, so one file can watch several logs and a player's
verification can add the checkpoint its game was proven in. Written whole to a temporary file and renamed
over the old one: a crash mid-write leaves the previous state, never half of one.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from pokna_verify.bounded_input import InputLimitError, loads
from pokna_verify.cli.input_files import UnusableInputError, read_document
from pokna_verify.tlog.checkpoint import Checkpoint, parse_checkpoint
from pokna_verify.tlog.errors import LogError


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
    text, blank, _ = note.rpartition("\n\n")
    try:
        if not blank:
            raise LogError("no signature block")
        return parse_checkpoint(text + "\n")
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
