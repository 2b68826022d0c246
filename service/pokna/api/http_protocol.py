"""The HTTP/1.1 server protocol `pokna serve` runs: uvicorn's h11 protocol, refusing what it cannot parse
with problem+json like every other answer.

A request h11 cannot parse (`Content-Length: abc`, a header line without a colon, no `Host`) never
reaches the application: uvicorn answers it itself, by default with a `text/plain`
400. Pinning h11 (rather than uvicorn's "auto", which would switch to httptools if it were installed)
keeps this the one place where such an answer is made."""

from __future__ import annotations

import json
import uuid

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

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


class ProblemH11Protocol(H11Protocol):
    def send_400_response(self, msg: str) -> None:
        """uvicorn's own refusal, with our body; `msg` is uvicorn's fixed text, already logged by it."""
        request_id = uuid.uuid4().hex
        payload = unparsable_request_problem(request_id)
        headers = [
            (b"content-type", b"application/problem+json"),
            (b"content-length", str(len(payload)).encode()),
            (b"x-request-id", request_id.encode()),
            (b"connection", b"close"),
        ]
        for event in (
            h11.Response(status_code=400, headers=headers, reason=b"Bad Request"),
            h11.Data(data=payload),
            h11.EndOfMessage(),
        ):
            output = self.conn.send(event)
            if output:
                self.transport.write(output)
        self.transport.close()
