"""Audit bundles written from the database: the shell around pokna.audit's format (docs/audit.md)."""

from pokna.bundles.writer import BundleRange, open_bundle

__all__ = ["BundleRange", "open_bundle"]
