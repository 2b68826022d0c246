"""The interactive API reference, `/docs` (Swagger UI), served with its script and styles from the installed
`fastapi-offline` package: no CDN, so it works without internet. There is no `/redoc`: ReDoc fetches its
logo from a CDN whatever it is told."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

ASSETS_URL = "/docs/assets"


def install_docs(app: FastAPI) -> None:
    """Call with `docs_url=None, redoc_url=None` on the app: this page replaces FastAPI's CDN-backed ones."""
    openapi_url = app.openapi_url or "/openapi.json"
    assets = Path(str(resources.files("fastapi_offline").joinpath("static")))
    app.mount(ASSETS_URL, StaticFiles(directory=assets), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=openapi_url,
            title=f"{app.title} - API reference",
            swagger_js_url=f"{ASSETS_URL}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS_URL}/swagger-ui.css",
            swagger_favicon_url=f"{ASSETS_URL}/favicon.png",
        )
