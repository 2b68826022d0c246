"""The witness's state file: the last checkpoint it accepted of each log, by origin, as served (signed).

JSON, `{"logs": {origin: {"checkpoint": note, "url": address}}}`, so one file can watch several logs and a
player's verification can add the checkpoint its game was proven in. Written whole to a temporary file and
renamed over the old one: a crash mid-write leaves the previous state, never half of one.

`url` is the log's address (https://host/v1/logs/TENANT) the checkpoint was kept from (files written before
it have none, until a check that accepts the kept checkpoint records it: `WitnessState.pin_address`): the
origin an address signed under is pinned, so a log cannot leave its witnesses' history behind by signing
under a new name (`origin_problem`).
"""

from __future__ import annotations

import json
import os
import tempfile
import urllib.parse
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

from pokna_verify.bounded_input import InputLimitError, loads
from pokna_verify.cli.input_files import UnusableInputError, read_document
from pokna_verify.tlog.checkpoint import Checkpoint, parse_checkpoint
from pokna_verify.tlog.errors import LogError, SignatureError
from pokna_verify.tlog.note import open_note


@dataclass
class WitnessState:
    notes: dict[str, str] = field(default_factory=dict)  # origin -> the kept checkpoint's signed note
    urls: dict[str, str] = field(default_factory=dict)  # origin -> the log's address it was kept from

    def keep(self, origin: str, note: str, url: str) -> None:
        self.notes[origin] = note
        self.urls[origin] = url

    def pin_address(self, origin: str, url: str) -> bool:
        """Record `url` as the kept checkpoint's address if none is (a file written before addresses were
        kept), so that from now on a rename is caught even while the log does not grow; whether it did."""
        if origin not in self.notes or origin in self.urls:
            return False
        self.urls[origin] = url
        return True


def read_state(path: Path) -> WitnessState:
    """What the witness kept; nothing if the file does not exist yet."""
    if not path.exists():
        return WitnessState()
    data = read_document(path, "state")
    try:
        document = loads(data.decode("utf-8"))
        logs = document["logs"]
        kept = {origin: entry["checkpoint"] for origin, entry in logs.items()}
        urls = {origin: entry["url"] for origin, entry in logs.items() if "url" in entry}
    except InputLimitError as error:
        raise UnusableInputError(f"the state file {path}: {error}") from None
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise UnusableInputError(f"the state file {path} is not a witness's state ({error!r})") from error
    texts = [*kept.items(), *urls.items()]
    if not all(isinstance(origin, str) and isinstance(text, str) for origin, text in texts):
        raise UnusableInputError(f"the state file {path} is not a witness's state")
    return WitnessState(kept, urls)


def origin_problem(state: WitnessState, url: str, origin: str) -> str | None:
    """Why the checkpoint served at the log address `url` cannot be this log's, or None. Its origin must
    name the tenant the address names (`<prefix>/<tenant>`, docs/fairness.md), and must be the origin the
    address signed under when a checkpoint was kept from it: a log signing under a new name would be judged
    the first checkpoint of another log, whatever history it now shows."""
    tenant = urllib.parse.unquote(url.rstrip("/").rsplit("/", 1)[-1])  # as the service reads its path
    if not origin.endswith(f"/{tenant}"):
        return f"{url} served a checkpoint of {origin}, which is not tenant {tenant}'s log"
    renamed = sorted(kept for kept, kept_url in state.urls.items() if kept_url == url and kept != origin)
    if renamed:
        return (
            f"{url} now signs as {origin}, after signing as {renamed[0]} (kept in the state file): a log that "
            "changes its name leaves its witnesses' history behind"
        )
    return None


def kept_checkpoint(state: WitnessState, origin: str, path: Path) -> Checkpoint | None:
    note = state.notes.get(origin)
    if note is None:
        return None
    try:
        return unsigned_checkpoint(note)
    except LogError as error:
        raise UnusableInputError(
            f"the state file {path} keeps an unreadable checkpoint of {origin}: {error}"
        ) from error


def write_state(path: Path, state: WitnessState) -> None:
    logs: dict[str, dict[str, str]] = {}
    for origin, note in sorted(state.notes.items()):
        logs[origin] = {"checkpoint": note}
        if origin in state.urls:
            logs[origin]["url"] = state.urls[origin]
    document = {"logs": logs}
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
