"""Entry point for ASGI servers: `uvicorn --factory pokna.app.asgi:create_app`."""

from __future__ import annotations

from fastapi import FastAPI

from pokna.app import create_app as _create_app
from pokna.logs import configure_logging
from pokna.settings import get_settings
from pokna.supervision import end_with_supervisor


def create_app() -> FastAPI:
    end_with_supervisor()  # in a worker of `pokna serve --workers N`
    settings = get_settings()
    configure_logging(settings.log_level)
    return _create_app(settings)
