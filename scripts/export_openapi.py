"""Write openapi/openapi.json from the app. `make openapi` runs it; a test fails when it is stale."""

from __future__ import annotations

from pathlib import Path

from pokna.app.openapi_document import render_openapi

TARGET = Path(__file__).resolve().parents[1] / "openapi" / "openapi.json"


def main() -> None:
    TARGET.write_text(render_openapi(), encoding="utf-8")
    print(f"wrote {TARGET.relative_to(Path.cwd()) if TARGET.is_relative_to(Path.cwd()) else TARGET}")


if __name__ == "__main__":
    main()
