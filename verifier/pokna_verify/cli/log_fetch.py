"""Reading a public log over HTTP: its checkpoints (signed notes, text) and its proofs (JSON).

Apart from input_files' fetching because a log answers 404 for something that is not an error to the
caller (a game not logged yet), and because its answers are small: anything past MAX_LOG_BYTES is refused.
Each GET is url_fetch.get's, so a log that trickles its answer is given up at the same deadline.
"""

from __future__ import annotations

import base64
import binascii
import http.client
import urllib.parse
from typing import Any

from pokna_verify.bounded_input import InputLimitError, loads
from pokna_verify.cli.input_files import UnusableInputError, is_url
from pokna_verify.cli.url_fetch import DeadlinePassed, get

MAX_LOG_BYTES = 1024 * 1024
LOG_PATH = "/v1/logs/"


class NotThere(UnusableInputError):
    """The log answered 404: what was asked is not in it (yet)."""


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


def fetch(url: str, what: str, accept: str) -> bytes:
    """The answer's body, within MAX_LOG_BYTES and url_fetch's deadline for the whole fetch."""
    try:
        answer = get(url, accept=accept, max_bytes=MAX_LOG_BYTES)
    except DeadlinePassed as error:
        raise UnusableInputError(f"cannot fetch the {what} from {url}: {error}") from None
    except (OSError, http.client.HTTPException, ValueError) as error:
        reason = getattr(error, "reason", None) or error or type(error).__name__
        raise UnusableInputError(f"cannot fetch the {what} from {url}: {reason}") from error
    if not answer.ok:
        said = _problem_of(answer.body)
        if answer.status == 404:
            raise NotThere(f"{url} answered HTTP 404{said}")
        raise UnusableInputError(
            f"cannot fetch the {what} from {url}: it answered HTTP {answer.status}{said}"
        )
    if len(answer.body) > MAX_LOG_BYTES:
        raise UnusableInputError(f"{url} answered more than {MAX_LOG_BYTES} bytes: not a {what}")
    return answer.body


def fetch_text(url: str, what: str) -> str:
    try:
        return fetch(url, what, "text/plain").decode("utf-8")
    except UnicodeDecodeError as error:
        raise UnusableInputError(f"{url} did not answer UTF-8 text: not a {what}") from error


def fetch_json(url: str, what: str) -> dict[str, Any]:
    try:
        document = loads(fetch(url, what, "application/json").decode("utf-8"))
    except InputLimitError as error:
        raise UnusableInputError(f"the {what} from {url}: {error}") from None
    except ValueError as error:  # not UTF-8, or not JSON
        raise UnusableInputError(f"{url} did not answer JSON: not a {what}") from error
    if not isinstance(document, dict):
        raise UnusableInputError(f"{url} answered JSON but not an object: not a {what}")
    return document


def hashes_of(values: object, named: str) -> list[bytes]:
    """An audit path as a log serves it, or as a link carries it (`named` says which in a message)."""
    if not isinstance(values, list) or not all(isinstance(value, str) for value in values):
        raise UnusableInputError(f"{named} is not a list of base64 hashes")
    try:
        return [base64.b64decode(value, validate=True) for value in values]
    except (binascii.Error, ValueError) as error:
        raise UnusableInputError(f"{named} holds a hash that is not base64: {error}") from error


def _problem_of(body: bytes) -> str:
    try:
        problem = loads(body.decode("utf-8"))
    except (ValueError, InputLimitError):
        return ""
    explained = problem.get("detail") if isinstance(problem, dict) else None
    return f": {' '.join(explained.split())[:200]}" if isinstance(explained, str) and explained else ""
