"""The HTTP/1.1 server protocol `pokna serve` runs: uvicorn's httptools protocol (llhttp, in C), refusing
what it cannot parse with problem+json like every other answer.

A request the parser refuses (`Content-Length: abc`, a header line without a colon, a space before the
colon, two different lengths) never reaches the application: uvicorn answers it itself, by default with a
`text/plain` 400. `send_400_response` makes that answer problem+json. llhttp accepts an HTTP/1.1 request
without `Host`, which RFC 9112 (3.2) says a server must refuse with 400; h11 refuses it, so this protocol
does too, before the request starts.

`pokna serve` names `ProblemHttpToolsProtocol` (`pokna.cli.serve.HTTP_PROTOCOL`).
`ProblemH11Protocol` is the same refusal on uvicorn's pure-Python h11 protocol, which `pokna serve` ran
until issue 18: httptools parses a request in a fraction of h11's CPU (bench/README.md). Naming the
protocol class (rather than uvicorn's "auto") keeps this module the one place where such an answer is
made."""

from __future__ import annotations

import json
import uuid

import h11
import httptools
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

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
        (b"connection", b"close"),
    ]


MAX_HEAD_BYTES = 16 * 1024
"""The request line's URL and the header block together, at most: h11 refused a longer head (uvicorn's
`h11_max_incomplete_event_size`), but uvicorn's httptools protocol keeps whatever arrives, so a client
could make a worker hold any amount of memory before the body cap or the rate limit could act."""


class ProblemHttpToolsProtocol(HttpToolsProtocol):
    head_bytes = 0

    def on_message_begin(self) -> None:
        self.head_bytes = 0
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
        super().on_headers_complete()

    def send_400_response(self, msg: str) -> None:
        """uvicorn's own refusal, with our body; `msg` is uvicorn's fixed text, already logged by it."""
        request_id = uuid.uuid4().hex
        payload = unparsable_request_problem(request_id)
        head = [b"HTTP/1.1 400 Bad Request\r\n"]
        for name, value in [*self.server_state.default_headers, *_problem_headers(payload, request_id)]:
            head.extend([name, b": ", value, b"\r\n"])
        self.transport.write(b"".join([*head, b"\r\n", payload]))
        self.transport.close()


class ProblemH11Protocol(H11Protocol):
    def send_400_response(self, msg: str) -> None:
        """uvicorn's own refusal, with our body; `msg` is uvicorn's fixed text, already logged by it."""
        request_id = uuid.uuid4().hex
        payload = unparsable_request_problem(request_id)
        for event in (
            h11.Response(
                status_code=400, headers=_problem_headers(payload, request_id), reason=b"Bad Request"
            ),
            h11.Data(data=payload),
            h11.EndOfMessage(),
        ):
            output = self.conn.send(event)
            if output:
                self.transport.write(output)
        self.transport.close()
