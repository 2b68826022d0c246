"""The committed OpenAPI document is generated from the app; this renders it deterministically."""

from __future__ import annotations

import json
from typing import Any

from pokna.app import create_app
from pokna.runtime import Runtime
from pokna.settings import Environment, Settings

UNCONNECTED_DATABASE_URL = "postgresql+psycopg://pokna@localhost/never-connected"


def openapi_document() -> dict[str, Any]:
    # The document does not depend on the database: the pools open only in the app's lifespan, never run here.
    settings = Settings(env=Environment.TEST, database_url=UNCONNECTED_DATABASE_URL)
    return create_app(settings, Runtime.from_settings(settings)).openapi()


def render_openapi() -> str:
    return json.dumps(openapi_document(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
