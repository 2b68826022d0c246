"""One GET of a URL the user named (a proof link, a key ring), bounded in size and in time.

The socket's timeout bounds each wait for the server, but a server that sends a byte every few seconds never
trips it and could keep the command for ever. So the whole fetch (name lookup, connection, TLS, headers,
body) runs in a thread of its own, and the command waits for it only until FETCH_DEADLINE_SECONDS: then it
answers, and the abandoned thread (a daemon) ends with its connection or with the process."""

from __future__ import annotations

import http.client
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass

FETCH_TIMEOUT_SECONDS = 10.0
"""The longest wait for any one thing from the server: the connection, or the next bytes."""
FETCH_DEADLINE_SECONDS = 30.0
"""The longest a whole fetch may take, however the server paces its answer."""
MAX_PROBLEM_BYTES = 64 * 1024
"""What is read of an error's body: enough for a problem+json's `detail`."""


@dataclass(frozen=True)
class Answer:
    ok: bool  # False: an HTTP error status, with the start of its body
    status: int
    body: bytes
    content_type: str


class DeadlinePassed(Exception):
    pass


def get(url: str, *, accept: str, max_bytes: int) -> Answer:
    """The answer, its body read up to `max_bytes + 1` bytes (one more says it was larger); DeadlinePassed
    when the whole of it did not come within FETCH_DEADLINE_SECONDS; else what urllib raises."""
    finished = threading.Event()
    outcome: list[Answer | BaseException] = []

    def fetch() -> None:
        try:
            outcome.append(_get(url, accept, max_bytes))
        except BaseException as error:  # handed to the waiting command, which names the URL
            outcome.append(error)
        finally:
            finished.set()

    threading.Thread(target=fetch, name=f"pokna-verify GET {url[:60]}", daemon=True).start()
    if not finished.wait(FETCH_DEADLINE_SECONDS):
        raise DeadlinePassed(f"no whole answer within {FETCH_DEADLINE_SECONDS:g} s, the limit for one fetch")
    answer = outcome[0]
    if isinstance(answer, BaseException):
        raise answer
    return answer


def _get(url: str, accept: str, max_bytes: int) -> Answer:
    request = urllib.request.Request(url, headers={"Accept": accept})  # noqa: S310 (http(s), checked)
    try:
        with urllib.request.urlopen(request, timeout=FETCH_TIMEOUT_SECONDS) as response:  # noqa: S310
            body = response.read(max_bytes + 1)
            return Answer(True, response.status, body, response.headers.get_content_type())
    except urllib.error.HTTPError as error:
        with error:
            try:
                problem = error.read(MAX_PROBLEM_BYTES)
            except (OSError, http.client.HTTPException):
                problem = b""
            content_type = error.headers.get_content_type() if error.headers is not None else ""
            return Answer(False, error.code, problem, content_type)
