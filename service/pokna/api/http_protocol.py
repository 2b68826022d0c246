"""The HTTP/1.1 server protocol `pokna serve` runs: uvicorn's httptools protocol (llhttp, in C), refusing
what it cannot parse with problem+json like every other answer.

A request the parser refuses (`Content-Length: abc`, a header line without a colon, a space before the
colon, two different lengths) never reaches the application: uvicorn answers it itself, by default with a
`text/plain` 400. `send_400_response` makes that answer problem+json. llhttp accepts an HTTP/1.1 request
without `Host`, which RFC 9112 (3.2) says a server must refuse with 400; h11 refuses it, so this protocol
does too, before the request starts. `pokna serve` names this class (`pokna.cli.serve.HTTP_PROTOCOL`), so
this module is the one place where such an answer is made.

Why a subclass of uvicorn's protocol class and not uvicorn's settings (uvicorn 0.54; issue 35 asked): what
tests/api/test_http_protocol.py holds has no supported setting behind it.
- problem+json for an unparsable request, and a 408 for a head that stops arriving: uvicorn has no hook for
  the answers it makes itself (`send_400_response` is its protocol's method, with a fixed text/plain body),
  and no head timeout at all (`timeout_keep_alive` bounds the idle time between requests, not a request's
  head; `limit_concurrency` answers 503 to connections over a count, not to a slow one).
- a head over 16 KiB refused as its bytes arrive: `h11_max_incomplete_event_size` is that limit, but for the
  h11 protocol only; httptools keeps whatever arrives. h11 with that setting would also give the missing
  `Host` refusal for free, but it answers both in text/plain, and httptools parses a request in a
  fraction of h11's CPU (bench/README.md, issue 18).
So the subclass overrides uvicorn's parser callbacks (`on_url`, `on_header`, `on_headers_complete`,
`data_received`) and its refusal (`send_400_response`); an upgrade of uvicorn is checked by that test file,
which speaks to a real `pokna serve` over a raw socket."""

from __future__ import annotations

import asyncio
import json
import uuid

import httptools
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from pokna.settings import get_settings

UNPARSABLE_DETAIL = (
    "The request is not valid HTTP/1.1 (its framing or a header could not be parsed); nothing was done."
)


def unparsable_request_problem(request_id: str) -> bytes:
    return json.dumps(
        {
            "type": "https://pokna.dev/problems/bad_request",
            "title": "Bad request",
            "status": 400,
            "detail": UNPARSABLE_DETAIL,
            "code": "bad_request",
            "instance": None,
            "request_id": request_id,
        }
    ).encode()


def _problem_headers(payload: bytes, request_id: str) -> list[tuple[bytes, bytes]]:
    return [
        (b"content-type", b"application/problem+json"),
        (b"content-length", str(len(payload)).encode()),
        (b"x-request-id", request_id.encode()),
        (b"x-content-type-options", b"nosniff"),
        (b"connection", b"close"),
    ]


MAX_HEAD_BYTES = 16 * 1024
"""The request line's URL and the header block together, at most: h11 refused a longer head (uvicorn's
`h11_max_incomplete_event_size`), but uvicorn's httptools protocol keeps whatever arrives, so a client
could make a worker hold any amount of memory before the body cap or the rate limit could act."""


def request_timeout_problem(request_id: str, detail: str) -> bytes:
    return json.dumps(
        {
            "type": "https://pokna.dev/problems/request_timeout",
            "title": "Request timeout",
            "status": 408,
            "detail": detail,
            "code": "request_timeout",
            "instance": None,
            "request_id": request_id,
        }
    ).encode()


class ProblemHttpToolsProtocol(HttpToolsProtocol):
    """Bounds what a client can make a worker hold before its request reaches the application: the head's
    bytes (`MAX_HEAD_BYTES`) and the time to send it (`POKNA_REQUEST_HEAD_TIMEOUT_SECONDS`)."""

    head_bytes = 0
    head_received = 0
    """Bytes fed to the parser while the head is unfinished, counted as they arrive: httptools hands a
    header over only once its line ends, and keeps (and copies, read after read) a value that never ends."""
    head_complete = False
    head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_head_timer()  # the first byte is part of the head's time

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_head_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        """Feeds the parser no more of an unfinished head than the cap allows, so an endless header is
        refused within its first `MAX_HEAD_BYTES` and costs no more than they do."""
        while data and not self.transport.is_closing():
            if self.head_complete:
                super().data_received(data)
                return
            room = MAX_HEAD_BYTES + 1 - self.head_received
            piece, data = data[:room], data[room:]
            self.head_received += len(piece)
            super().data_received(piece)
            if not self.head_complete and self.head_received > MAX_HEAD_BYTES:
                self.logger.warning("Invalid HTTP request received.")
                self.send_400_response(f"a request head over {MAX_HEAD_BYTES} bytes")
                return

    def on_message_begin(self) -> None:
        self.head_bytes = 0
        self.head_complete = False
        if self.head_timer is None:
            self._arm_head_timer()
        super().on_message_begin()

    def on_url(self, url: bytes) -> None:
        self._count_head(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count_head(len(name) + len(value))
        super().on_header(name, value)

    def _count_head(self, size: int) -> None:
        self.head_bytes += size
        if self.head_bytes > MAX_HEAD_BYTES:
            raise httptools.HttpParserError(f"a request head over {MAX_HEAD_BYTES} bytes")

    def on_headers_complete(self) -> None:
        if self.parser.get_http_version() == "1.1" and not any(name == b"host" for name, _ in self.headers):
            # Raised inside the parser's callback: feed_data raises it on as HttpParserCallbackError, an
            # HttpParserError, which `data_received` answers with `send_400_response`.
            raise httptools.HttpParserError("an HTTP/1.1 request without Host")
        self.head_complete = True
        # The next request's head counts from here: what of this read follows the head is fed whole, so a
        # pipelined head in it is bounded by `_count_head` and the size of one read.
        self.head_received = 0
        self._disarm_head_timer()
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self.head_complete = False  # what follows is the next request's head
        super().on_message_complete()

    def _arm_head_timer(self) -> None:
        self._disarm_head_timer()
        seconds = get_settings().request_head_timeout_seconds
        self.head_timer = self.loop.call_later(seconds, self._head_timed_out)

    def _disarm_head_timer(self) -> None:
        if self.head_timer is not None:
            self.head_timer.cancel()
            self.head_timer = None

    def _head_timed_out(self) -> None:
        """RFC 9110 (15.5.9): a server may answer 408 and close when a request does not arrive in time. A
        connection still answering an earlier request (pipelined) is only closed."""
        self.head_timer = None
        if self.transport.is_closing():
            return
        if self.cycle is not None and not self.cycle.response_complete:
            self.transport.close()
            return
        request_id = uuid.uuid4().hex
        seconds = get_settings().request_head_timeout_seconds
        detail = f"The request's line and headers did not arrive within {seconds:g} s; nothing was done."
        self._send_problem(b"408 Request Timeout", request_timeout_problem(request_id, detail), request_id)

    def send_400_response(self, msg: str) -> None:
        """uvicorn's own refusal, with our body; `msg` is uvicorn's fixed text, already logged by it."""
        self._disarm_head_timer()
        request_id = uuid.uuid4().hex
        self._send_problem(b"400 Bad Request", unparsable_request_problem(request_id), request_id)

    def _send_problem(self, status: bytes, payload: bytes, request_id: str) -> None:
        head = [b"HTTP/1.1 ", status, b"\r\n"]
        for name, value in [*self.server_state.default_headers, *_problem_headers(payload, request_id)]:
            head.extend([name, b": ", value, b"\r\n"])
        self.transport.write(b"".join([*head, b"\r\n", payload]))
        self.transport.close()
