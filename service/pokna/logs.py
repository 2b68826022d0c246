"""Structured JSON logs, one object per line, carrying the request id when there is one.

Plain text only: uvicorn adds a `color_message` with ANSI colour codes to its records, which a log
collector would store as noise, so it is dropped and any escape code left in a value is removed."""

from __future__ import annotations

import json
import logging
import re
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

request_id_var: ContextVar[str | None] = ContextVar("request_id", default=None)

_STANDARD_ATTRS = set(vars(logging.makeLogRecord({}))) | {"message", "asctime", "color_message"}
_ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "at": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": _plain(record.getMessage()),
        }
        request_id = request_id_var.get()
        if request_id:
            entry["request_id"] = request_id
        entry.update(
            {
                k: _plain(v) if isinstance(v, str) else v
                for k, v in vars(record).items()
                if k not in _STANDARD_ATTRS
            }
        )
        if record.exc_info:
            entry["exception"] = _plain(self.formatException(record.exc_info))
        return json.dumps(entry, default=str)


def _plain(text: str) -> str:
    return _ANSI_ESCAPE.sub("", text)


def configure_logging(level: str = "INFO") -> None:
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logging.getLogger(name).handlers[:] = []
        logging.getLogger(name).propagate = True
    # `pokna.access` (pokna.api.middleware) writes the one line per request, with the request id and the
    # route; uvicorn's own access line would repeat it, whichever way uvicorn was started.
    logging.getLogger("uvicorn.access").disabled = True
