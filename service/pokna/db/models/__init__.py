"""Every table, imported here so Alembic's autogenerate and `alembic check` see the whole schema."""

from pokna.db.models.tenant import ApiKey, Tenant

__all__ = ["ApiKey", "Tenant"]
