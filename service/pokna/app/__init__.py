"""The assembly on top of the domains: the app that mounts every domain's router, its OpenAPI document,
the answers' examples and the docs pages."""

from pokna.app.assembly import create_app

__all__ = ["create_app"]
