"""Reading a public log over HTTP: its checkpoints (signed notes, text) and its proofs (JSON), fetched as
input_files fetches (a 404 is NotThere: a game not logged yet is no error to the caller). A log's answers
are small: anything past MAX_LOG_BYTES is refused."""

from __future__ import annotations

import base64
import binascii
import urllib.parse
from typing import Any

from pokna_verify.cli.input_files import UnusableInputError, fetch, fetch_json_object, is_url
from pokna_verify.tlog.checkpoint import Checkpoint
from pokna_verify.tlog.witness import Witnessed, judge, needs_consistency_proof

MAX_LOG_BYTES = 1024 * 1024
LOG_PATH = "/v1/logs/"


def log_base(url: str) -> str:
    """`https://host/v1/logs/TENANT`, from it or from any of its addresses (its `/checkpoint`, ...)."""
    if not is_url(url):
        raise UnusableInputError(f"{url!r} is not an http(s) URL of a log (https://host{LOG_PATH}TENANT)")
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError as error:  # "http://[::1/...": no address at all
        raise UnusableInputError(f"{url} is not a log's address: {error}") from None
    path = parts.path
    if LOG_PATH not in path:
        raise UnusableInputError(f"{url} is not a log's address: it has no {LOG_PATH}TENANT")
    tenant = path.split(LOG_PATH, 1)[1].split("/", 1)[0]
    if not tenant:
        raise UnusableInputError(f"{url} names no log: {LOG_PATH} is followed by nothing")
    return f"{parts.scheme}://{parts.netloc}{path.split(LOG_PATH, 1)[0]}{LOG_PATH}{tenant}"


def keys_url_of(log_url: str) -> str:
    parts = urllib.parse.urlsplit(log_url)
    return f"{parts.scheme}://{parts.netloc}/v1/fairness/keys"


def fetch_text(url: str, what: str) -> str:
    try:
        return fetch(url, what, accept="text/plain", max_bytes=MAX_LOG_BYTES).body.decode("utf-8")
    except UnicodeDecodeError as error:
        raise UnusableInputError(f"{url} did not answer UTF-8 text: not a {what}") from error


def fetch_json(url: str, what: str) -> dict[str, Any]:
    return fetch_json_object(url, what, max_bytes=MAX_LOG_BYTES)


def hashes_of(values: object, named: str) -> list[bytes]:
    """An audit path as a log serves it, or as a link carries it (`named` says which in a message)."""
    if not isinstance(values, list) or not all(isinstance(value, str) for value in values):
        raise UnusableInputError(f"{named} is not a list of base64 hashes")
    try:
        return [base64.b64decode(value, validate=True) for value in values]
    except (binascii.Error, ValueError) as error:
        raise UnusableInputError(f"{named} holds a hash that is not base64: {error}") from error


def judged(base: str, kept: Checkpoint | None, latest: Checkpoint) -> Witnessed:
    """`latest` judged against `kept`, with the log's consistency proof between the two when one is needed."""
    path: list[bytes] = []
    if kept is not None and needs_consistency_proof(kept, latest):
        asked = f"{base}/consistency?first={kept.size}&second={latest.size}"
        answer = fetch_json(asked, "consistency proof")
        path = hashes_of(answer.get("consistency_path"), f"{asked}: consistency_path")
    return judge(kept, latest, path)
