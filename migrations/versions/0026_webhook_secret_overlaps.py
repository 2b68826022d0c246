"""An endpoint keeps every earlier secret that is still inside the overlap its rotation promised.

An endpoint stored its current secret and one previous one. A second rotation within the overlap
(`POKNA_WEBHOOK_SECRET_OVERLAP_SECONDS`, a day) overwrote the previous one, so the first secret stopped
signing at once, though its rotation had told the receiver it would sign for the day. Now:

- `sealed_previous_secrets` (varchar(200)[], NOT NULL): the earlier secrets, each sealed as before
  (AES-256-GCM under the seed key, pokna.webhooks.signing), newest first.
- `previous_secrets_expire_at` (timestamptz[], NOT NULL): when each stops signing, in the same order.
- `ck_webhook_endpoint_previous_secrets_paired`: the two arrays are as long as each other, and hold at
  most three (pokna.webhooks.policy.MAX_LIVE_SECRETS, the current one besides); the database refuses a row
  that would pair a secret with another's end, or keep more.

The previous secret and its end are carried over as one-element arrays (none: empty arrays), and
`sealed_previous_secret` and `previous_secret_expires_at` are dropped.

The downgrade keeps the newest earlier secret and its end, the only one the old columns can hold: the
others stop signing at once, as they did before this revision.

Revision ID: 0026_webhook_secret_overlaps
Revises: 0025_posting_created_at
Create Date: 2026-12-07
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0026_webhook_secret_overlaps"
down_revision = "0025_posting_created_at"
branch_labels = None
depends_on = None

PAIRED = (
    "cardinality(sealed_previous_secrets) = cardinality(previous_secrets_expire_at) "
    "AND cardinality(sealed_previous_secrets) <= 3"
)
# A previous secret with no end never signed (the claim asked for both), and a NULL end in the array would
# make every claim's comparison fail: such a row carries nothing over.
CARRY_OVER = (
    "UPDATE webhook_endpoint SET "
    "sealed_previous_secrets = CASE WHEN sealed_previous_secret IS NULL OR previous_secret_expires_at IS NULL "
    "THEN '{}' ELSE ARRAY[sealed_previous_secret] END, "
    "previous_secrets_expire_at = CASE WHEN sealed_previous_secret IS NULL OR previous_secret_expires_at IS NULL "
    "THEN '{}' ELSE ARRAY[previous_secret_expires_at] END"
)
# The first element by its ordinality, not `sealed_previous_secrets[1]`: an array subscript as an UPDATE's
# value crashes the Citus coordinator's backend (signal 11, Citus 14.0 on PostgreSQL 18), on a distributed
# table whatever the WHERE (tests/citus/test_citus_webhook_secret_overlaps.py).
CARRY_BACK = (
    "UPDATE webhook_endpoint SET sealed_previous_secret = (SELECT sealed FROM unnest(sealed_previous_secrets) "
    "WITH ORDINALITY AS earlier (sealed, place) WHERE place = 1), previous_secret_expires_at = (SELECT ends "
    "FROM unnest(previous_secrets_expire_at) WITH ORDINALITY AS earlier (ends, place) WHERE place = 1)"
)


def upgrade() -> None:
    op.add_column(
        "webhook_endpoint",
        sa.Column("sealed_previous_secrets", sa.ARRAY(sa.String(length=200)), nullable=True),
    )
    op.add_column(
        "webhook_endpoint",
        sa.Column("previous_secrets_expire_at", sa.ARRAY(sa.DateTime(timezone=True)), nullable=True),
    )
    op.execute(CARRY_OVER)
    op.alter_column("webhook_endpoint", "sealed_previous_secrets", nullable=False)
    op.alter_column("webhook_endpoint", "previous_secrets_expire_at", nullable=False)
    op.create_check_constraint(
        op.f("ck_webhook_endpoint_previous_secrets_paired"), "webhook_endpoint", PAIRED
    )
    op.drop_column("webhook_endpoint", "sealed_previous_secret")
    op.drop_column("webhook_endpoint", "previous_secret_expires_at")


def downgrade() -> None:
    op.add_column(
        "webhook_endpoint", sa.Column("sealed_previous_secret", sa.String(length=200), nullable=True)
    )
    op.add_column(
        "webhook_endpoint",
        sa.Column("previous_secret_expires_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.execute(CARRY_BACK)
    op.drop_constraint(op.f("ck_webhook_endpoint_previous_secrets_paired"), "webhook_endpoint", type_="check")
    op.drop_column("webhook_endpoint", "previous_secrets_expire_at")
    op.drop_column("webhook_endpoint", "sealed_previous_secrets")
