"""A public fairness link per game: an unguessable token that lets a player fetch the game's commitment, its
client seeds and, once the game has ended, its proof, without the tenant's API key.

The token is random (secrets.token_urlsafe(24): 192 bits), never derived from the game id, and unique.
Games created before this revision get one here, so every game has a link. It is stored as is: it opens only
what the game already publishes to its players, and the game's answer must be able to show it.

Revision ID: 0006_fairness_link
Revises: 0005_ledger_post_json
Create Date: 2026-12-01
"""

from __future__ import annotations

import secrets

import sqlalchemy as sa
from alembic import op

revision = "0006_fairness_link"
down_revision = "0005_ledger_post_json"
branch_labels = None
depends_on = None

_game = sa.table("game", sa.column("id", sa.String), sa.column("public_token", sa.String))


def upgrade() -> None:
    with op.batch_alter_table("game") as batch:
        batch.add_column(sa.Column("public_token", sa.String(length=64), nullable=True))
    connection = op.get_bind()
    game_ids = [
        row.id for row in connection.execute(sa.select(_game.c.id).where(_game.c.public_token.is_(None)))
    ]
    for game_id in game_ids:
        connection.execute(
            _game.update().where(_game.c.id == game_id).values(public_token=secrets.token_urlsafe(24))
        )
    # Left nullable as it was first written (when this migration also ran on a second database); every
    # game gets a token at creation (pokna.dealer) and above.
    op.create_index("ix_game_public_token", "game", ["public_token"], unique=True)


def downgrade() -> None:
    op.drop_index("ix_game_public_token", table_name="game")
    with op.batch_alter_table("game") as batch:
        batch.drop_column("public_token")
