"""The committed OpenAPI document is generated from the app; this renders it deterministically."""

from __future__ import annotations

import json
from typing import Any

from pokna.app import create_app
from pokna.runtime import Runtime
from pokna.settings import Environment, Settings

UNCONNECTED_DATABASE_URL = "postgresql+psycopg://pokna@localhost/never-connected"


def openapi_document() -> dict[str, Any]:
    # The document does not depend on the database: an engine that is never connected is enough.
    settings = Settings(env=Environment.TEST, database_url=UNCONNECTED_DATABASE_URL)
    app = create_app(settings, Runtime.from_settings(settings))
    document: dict[str, Any] = app.openapi()
    return document


def render_openapi() -> str:
    return json.dumps(openapi_document(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
