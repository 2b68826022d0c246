"""Reading what a user hands the offline verifiers: a file, or an http(s) URL when the user gave one.
Anything unreadable is "unusable input" (exit 2), which is a different answer from "invalid" (exit 1): the
user gave us nothing we could judge."""

from __future__ import annotations

import http.client
import urllib.error
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from pokna_verify.bounded_input import (
    MAX_DOCUMENT_BYTES,
    InputLimitError,
    describe_bytes,
    loads,
    next_line,
    on_line,
)
from pokna_verify.cli.url_fetch import FETCH_TIMEOUT_SECONDS, Answer, DeadlinePassed, get
from pokna_verify.crypto.signing import load_public_key_pem, public_key_from_b64url


class UnusableInputError(Exception):
    pass


def is_url(source: str) -> bool:
    return source.startswith(("http://", "https://"))


def read_document(path: Path, what: str) -> bytes:
    """The file's bytes, up to MAX_DOCUMENT_BYTES: a FIFO or a device (/dev/zero) is read no further."""
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_DOCUMENT_BYTES + 1)
    except OSError as error:
        raise UnusableInputError(f"cannot read the {what} file {path}: {error.strerror or error}") from error
    if len(data) > MAX_DOCUMENT_BYTES:
        raise UnusableInputError(
            f"the {what} file {path} is larger than {describe_bytes(MAX_DOCUMENT_BYTES)}, the most the "
            "verifiers read of one document"
        )
    return data


def read_json_object(path: Path, what: str) -> dict[str, Any]:
    data = read_document(path, what)
    try:
        document = loads(data.decode("utf-8"))
    except InputLimitError as error:
        raise UnusableInputError(f"the {what} file {path}: {error}") from None
    except ValueError as error:  # not UTF-8, or not JSON
        raise UnusableInputError(f"the {what} file {path} is not JSON: {error}") from error
    if not isinstance(document, dict):
        raise UnusableInputError(f"the {what} file {path} holds JSON but not an object")
    return document


class NotThere(UnusableInputError):
    """The server answered 404: what was asked is not there, which a log's caller may not count as an error
    (a game not logged yet)."""


def fetch(
    url: str, what: str, *, accept: str, max_bytes: int = MAX_DOCUMENT_BYTES, not_found: str | None = None
) -> Answer:
    """GET `url`. Every failure, the network's or the server's, becomes one line naming the URL. `not_found`
    is said instead of the generic message when the server answers 404."""
    if not is_url(url):
        raise UnusableInputError(f"the {what} URL {url} is not http(s)")
    try:
        answer = get(url, accept=accept, max_bytes=max_bytes)
    except DeadlinePassed as error:
        raise UnusableInputError(f"cannot fetch the {what} from {url}: {error}") from None
    except TimeoutError as error:
        raise UnusableInputError(
            f"cannot fetch the {what} from {url}: no answer within {FETCH_TIMEOUT_SECONDS:g} s"
        ) from error
    except urllib.error.URLError as error:
        reason = error.reason
        if isinstance(reason, TimeoutError):
            reason = f"no answer within {FETCH_TIMEOUT_SECONDS:g} s"
        raise UnusableInputError(f"cannot fetch the {what} from {url}: {reason}") from error
    except (OSError, http.client.HTTPException, ValueError) as error:
        raise UnusableInputError(
            f"cannot fetch the {what} from {url}: {error or type(error).__name__}"
        ) from error
    if not answer.ok:
        refusal = NotThere if answer.status == 404 else UnusableInputError
        raise refusal(_http_error_message(url, what, answer, not_found))
    if len(answer.body) > max_bytes:
        raise UnusableInputError(
            f"{url} answered more than {describe_bytes(max_bytes)}, the most the verifiers read of a {what}"
        )
    return answer


def fetch_json_object(
    url: str, what: str, *, max_bytes: int = MAX_DOCUMENT_BYTES, not_found: str | None = None
) -> dict[str, Any]:
    answer = fetch(url, what, accept="application/json", max_bytes=max_bytes, not_found=not_found)
    try:
        document = loads(answer.body.decode("utf-8"))
    except InputLimitError as error:
        raise UnusableInputError(f"the {what} from {url}: {error}") from None
    except ValueError as error:
        raise UnusableInputError(
            f"{url} did not answer with JSON ({answer.content_type}): not a {what}"
        ) from error
    if not isinstance(document, dict):
        raise UnusableInputError(f"{url} answered JSON but not an object: not a {what}")
    return document


def read_json_source(source: str, what: str, *, not_found: str | None = None) -> dict[str, Any]:
    """An http(s) URL is fetched (only because the user gave one); anything else is a file path."""
    if is_url(source):
        return fetch_json_object(source, what, not_found=not_found)
    return read_json_object(Path(source), what)


def _http_error_message(url: str, what: str, answer: Answer, not_found: str | None) -> str:
    """The status, plus the problem+json `detail` (or `title`) when the server sent one."""
    said = f"HTTP {answer.status}"
    try:
        problem = loads(answer.body.decode("utf-8"))
    except (ValueError, InputLimitError):
        problem = None
    if isinstance(problem, dict):
        explained = problem.get("detail") or problem.get("title")
        if isinstance(explained, str) and explained:
            said = f"{said}: {' '.join(explained.split())[:200]}"
    if answer.status == 404 and not_found is not None:
        return f"{not_found}: {url} answered {said}"
    return f"cannot fetch the {what} from {url}: it answered {said}"


def read_public_key(path: Path) -> Ed25519PublicKey:
    """PEM, or the base64url of the raw 32 bytes as GET /v1/fairness/keys publishes it."""
    data = read_document(path, "public key")
    if b"-----BEGIN" in data:
        return load_public_key_pem(data)
    return public_key_from_b64url(data.decode("ascii", "replace").strip())


def public_key_argument(source: str) -> Ed25519PublicKey:
    """`--public-key`: a file (PEM or base64url), or the base64url text itself as /v1/fairness/keys shows it."""
    path = Path(source)
    if path.exists():
        return read_public_key(path)
    try:
        return public_key_from_b64url(source.strip())
    except ValueError as error:
        raise UnusableInputError(
            f"--public-key {source[:60]!r} is neither a readable file nor a base64url Ed25519 public key"
        ) from error


def read_previous_checkpoint(path: Path) -> str:
    """The public log checkpoint an auditor kept from their previous bundle: the signed note's text (as
    GET /v1/logs/{tenant}/checkpoint answers it), or that previous bundle itself, whose third line holds
    it (pokna_verify.bundle.public_log); only the bundle's first three lines are read."""
    try:
        with path.open("rb") as handle:
            first = next_line(handle, 1)
            if not first.lstrip().startswith(b"{"):
                return read_document(path, "previous checkpoint").decode("utf-8", "replace")
            opening = [first, next_line(handle, 2), next_line(handle, 3)]
    except OSError as error:
        raise UnusableInputError(f"cannot read the previous checkpoint file {path}: {error}") from error
    for number, line in enumerate(opening, start=1):
        try:
            record = loads(line.decode("utf-8", "replace")) if line.strip() else None
        except ValueError:
            record = None
        except InputLimitError as error:
            raise on_line(number, error) from None
        if isinstance(record, dict) and record.get("type") == "pokna.log.checkpoint":
            note = record.get("checkpoint")
            if isinstance(note, str):
                return note
    raise UnusableInputError(f"{path} is neither a signed checkpoint nor a bundle that carries one")
