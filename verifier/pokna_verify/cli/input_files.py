"""Reading what a user hands the offline verifiers: a file, or an http(s) URL when the user gave one.
Anything unreadable is "unusable input" (exit 2), which is a different answer from "invalid" (exit 1): the
user gave us nothing we could judge."""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from pokna_verify.crypto.signing import load_public_key_pem, public_key_from_b64url

FETCH_TIMEOUT_SECONDS = 10.0
# A proof is a few kilobytes; an answer this large is not one, and is not read into memory.
MAX_FETCHED_BYTES = 16 * 1024 * 1024


class UnusableInputError(Exception):
    pass


def is_url(source: str) -> bool:
    return source.startswith(("http://", "https://"))


def read_json_object(path: Path, what: str) -> dict[str, Any]:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise UnusableInputError(f"cannot read the {what} file {path}: {error.strerror or error}") from error
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise UnusableInputError(f"the {what} file {path} is not JSON: {error}") from error
    if not isinstance(document, dict):
        raise UnusableInputError(f"the {what} file {path} holds JSON but not an object")
    return document


def fetch_json_object(url: str, what: str, *, not_found: str | None = None) -> dict[str, Any]:
    """GET `url` and parse its JSON object. Every failure, the network's or the server's, becomes one line
    naming the URL. `not_found` is said instead of the generic message when the server answers 404."""
    if not is_url(url):
        raise UnusableInputError(f"the {what} URL {url} is not http(s)")
    try:
        request = urllib.request.Request(url, headers={"Accept": "application/json"})  # noqa: S310 (checked)
        with urllib.request.urlopen(request, timeout=FETCH_TIMEOUT_SECONDS) as response:  # noqa: S310
            body = response.read(MAX_FETCHED_BYTES + 1)
            content_type = response.headers.get_content_type()
    except urllib.error.HTTPError as error:
        raise UnusableInputError(_http_error_message(url, what, error, not_found)) from error
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
    if len(body) > MAX_FETCHED_BYTES:
        raise UnusableInputError(f"{url} answered more than {MAX_FETCHED_BYTES} bytes: not a {what}")
    try:
        document = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise UnusableInputError(f"{url} did not answer with JSON ({content_type}): not a {what}") from error
    if not isinstance(document, dict):
        raise UnusableInputError(f"{url} answered JSON but not an object: not a {what}")
    return document


def read_json_source(source: str, what: str, *, not_found: str | None = None) -> dict[str, Any]:
    """An http(s) URL is fetched (only because the user gave one); anything else is a file path."""
    if is_url(source):
        return fetch_json_object(source, what, not_found=not_found)
    return read_json_object(Path(source), what)


def _http_error_message(url: str, what: str, error: urllib.error.HTTPError, not_found: str | None) -> str:
    """The status, plus the problem+json `detail` (or `title`) when the server sent one."""
    said = f"HTTP {error.code}"
    try:
        problem = json.loads(error.read(64 * 1024).decode("utf-8"))
    except (OSError, ValueError, http.client.HTTPException):
        problem = None
    if isinstance(problem, dict):
        explained = problem.get("detail") or problem.get("title")
        if isinstance(explained, str) and explained:
            said = f"{said}: {' '.join(explained.split())[:200]}"
    if error.code == 404 and not_found is not None:
        return f"{not_found}: {url} answered {said}"
    return f"cannot fetch the {what} from {url}: it answered {said}"


def read_public_key(path: Path) -> Ed25519PublicKey:
    """PEM, or the base64url of the raw 32 bytes as GET /v1/fairness/keys publishes it."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise UnusableInputError(
            f"cannot read the public key file {path}: {error.strerror or error}"
        ) from error
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
