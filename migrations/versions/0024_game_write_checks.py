"""Fewer checks and statements per game action (issue 44, round 4).

- The tenant foreign keys of `game`, `game_seat`, `game_event`, `game_roll` and `game_log_leaf` go: each of
  these rows names its tenant in a composite foreign key to a parent that is the tenant's (`game` by
  `(pot_account_id, tenant_id)` to `account`, the others by `(game_id, tenant_id)` to `game`), every such
  column is NOT NULL, and the parent has its own (so a tenant a row names exists, and keeps existing, by
  transitivity: docs/ledger.md, "A game's rows and their tenant"). Each was one more check, one more trigger
  event and one `KEY SHARE` lock on the tenant's one row, for every event and roll written.
- `ix_game_status` goes: no statement reads games by their status alone (the public log's backlog has
  `ix_game_awaiting_log`), and a game's non-HOT update wrote an entry into it on every step.
- `game_write()` reads its document once, into two composite types made here (`game_write_document`, its
  steps `game_write_step`), where it parsed the text of the whole document or step again for each member it
  read (`->` on `json`: about a dozen parses of each step, 10 us a 4 kB step each); it walks the arrays by
  index in expressions, where each `json_array_elements` / `json_populate_recordset` was a statement of the
  executor's (the batches' version check, the two loops over the steps, a step's events and rolls, the
  outbox, a step's money events: 13 statements an action of about 40); the game's row is set from a record
  read by an expression, not joined to a function scan.

Revision ID: 0024_game_write_checks
Revises: 0023_posting_batch_version
Create Date: 2026-12-06
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from alembic import op

revision = "0024_game_write_checks"
down_revision = "0023_posting_batch_version"
branch_labels = None
depends_on = None

# Tables whose tenant foreign key the composite one to their parent implies (the parent named in the key).
IMPLIED_TENANT_KEYS = ("game", "game_seat", "game_event", "game_roll", "game_log_leaf")

# The document's shape as game_write() reads it, in one json_populate_record (pokna.dealer.game_write_document
# writes it): a step's own members and the document's, each array and object left as its `json` text but the
# steps, which are read into their type too.
DOCUMENT_TYPES = (
    "CREATE TYPE game_write_step AS (game_id text, previous_version int, game json, seats json, events json, "
    "rolls json, batch json, money json)",
    "CREATE TYPE game_write_document AS (version text, steps game_write_step[], outbox json, answer json)",
)

GAME_WRITE = """
CREATE OR REPLACE FUNCTION game_write(p_tenant_id text, p_write json) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_write game_write_document;
    v_step game_write_step;
    v_rows json;
    v_game_id text;
    v_game game;
    v_event game_event;
    v_roll game_roll;
    v_message webhook_event;
    v_money json;
    v_post record;
    v_payload json;
    v_count int;
BEGIN
    IF (p_write->>'version') IS DISTINCT FROM '1' THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format(
            'game_write: a write of version %s; this function reads version 1',
            coalesce(p_write->>'version', 'none'));
    END IF;
    -- The document read once into its types, steps included (each `->` on `json` parses its whole text
    -- again); its arrays walked by index in expressions (a query, json_populate_recordset, is a statement of
    -- the executor's each time, dearer than the rows it reads).
    v_write := json_populate_record(NULL::game_write_document, p_write);
    v_write.steps := coalesce(v_write.steps, '{}');
    FOREACH v_step IN ARRAY v_write.steps LOOP
        IF json_typeof(v_step.batch) = 'object' AND (v_step.batch->>'version') IS DISTINCT FROM '1' THEN
            RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format(
                'game_write: a posting batch of version %s; this function reads version 1',
                coalesce(v_step.batch->>'version', 'none'));
        END IF;
    END LOOP;
    -- First everything that needs no ledger lock.
    FOREACH v_step IN ARRAY v_write.steps LOOP
        v_game_id := v_step.game_id;
        v_game := json_populate_record(NULL::game, v_step.game);
        UPDATE game SET status = v_game.status, state = v_game.state, version = v_game.version,
            event_count = v_game.event_count, revealed_server_seed = v_game.revealed_server_seed,
            game_client_seed = v_game.game_client_seed, proof = v_game.proof,
            turn_deadline_at = v_game.turn_deadline_at, started_at = v_game.started_at,
            ended_at = v_game.ended_at
        WHERE game.id = v_game_id AND game.tenant_id = p_tenant_id
            AND game.version = v_step.previous_version;
        GET DIAGNOSTICS v_count = ROW_COUNT;
        IF v_count <> 1 THEN
            RAISE EXCEPTION USING ERRCODE = 'PK500',
                MESSAGE = 'game ' || v_game_id || ' changed under its row lock';
        END IF;

        IF json_array_length(v_step.seats) > 0 THEN
            UPDATE game_seat SET client_seed = seeded.client_seed, client_seed_source = seeded.client_seed_source
            FROM json_populate_recordset(NULL::game_seat, v_step.seats) AS seeded
            WHERE game_seat.tenant_id = p_tenant_id AND game_seat.game_id = v_game_id
                AND game_seat.seat = seeded.seat;
        END IF;

        v_rows := v_step.events;
        FOR i IN 0 .. coalesce(json_array_length(v_rows), 0) - 1 LOOP
            v_event := json_populate_record(NULL::game_event, v_rows->i);
            INSERT INTO game_event (tenant_id, game_id, seq, kind, payload, occurred_at)
            VALUES (p_tenant_id, v_game_id, v_event.seq, v_event.kind, v_event.payload, v_event.occurred_at);
        END LOOP;
        v_rows := v_step.rolls;
        FOR i IN 0 .. coalesce(json_array_length(v_rows), 0) - 1 LOOP
            v_roll := json_populate_record(NULL::game_roll, v_rows->i);
            INSERT INTO game_roll (tenant_id, game_id, nonce, seat, purpose, face, color, rolled_at)
            VALUES (p_tenant_id, v_game_id, v_roll.nonce, v_roll.seat, v_roll.purpose, v_roll.face, v_roll.color,
                v_roll.rolled_at);
        END LOOP;
    END LOOP;

    v_rows := v_write.outbox;
    FOR i IN 0 .. coalesce(json_array_length(v_rows), 0) - 1 LOOP
        v_message := json_populate_record(NULL::webhook_event, v_rows->i);
        INSERT INTO webhook_event (id, tenant_id, type, ordering_key, body, occurred_at)
        VALUES (v_message.id, p_tenant_id, v_message.type, v_message.ordering_key, v_message.body,
            v_message.occurred_at);
    END LOOP;

    IF json_typeof(v_write.answer) = 'object' THEN
        UPDATE idempotency_record SET response_status = (v_write.answer->>'status')::int,
            response_body = v_write.answer->>'body', locked_until = NULL
        WHERE tenant_id = p_tenant_id AND key = v_write.answer->>'key';
    END IF;

    -- Then the postings, in step order: the first takes the tenant's head, held until COMMIT.
    FOREACH v_step IN ARRAY v_write.steps LOOP
        CONTINUE WHEN json_typeof(v_step.batch) IS DISTINCT FROM 'object';
        SELECT * INTO v_post FROM ledger_post(p_tenant_id, v_step.batch::jsonb);
        IF v_post.status <> 'posted' THEN
            RAISE EXCEPTION USING ERRCODE = 'PK409', MESSAGE = 'ledger_post: ' || v_post.status,
                DETAIL = json_build_object('status', v_post.status,
                    'account_id', v_post.refused_account_id, 'balance', v_post.refused_balance,
                    'change', v_post.refused_change)::text;
        END IF;
        v_rows := v_step.money;
        FOR i IN 0 .. coalesce(json_array_length(v_rows), 0) - 1 LOOP
            v_money := v_rows->i;
            SELECT json_object_agg(member.key, CASE member.key
                    WHEN 'ledger_seq' THEN to_json(v_post.first_seq + (v_money->>'n')::int - 1)
                    ELSE member.value END ORDER BY member.n)
                INTO v_payload FROM json_each(v_money->'payload') WITH ORDINALITY AS member(key, value, n);
            INSERT INTO game_event (tenant_id, game_id, seq, kind, payload, occurred_at)
            VALUES (p_tenant_id, v_step.game_id, (v_money->>'seq')::int, 'money_moved', v_payload,
                (v_money->>'occurred_at')::timestamptz);
        END LOOP;
    END LOOP;
END
$$
"""


def upgrade() -> None:
    for table in IMPLIED_TENANT_KEYS:
        op.drop_constraint(f"fk_{table}_tenant_id_tenant", table, type_="foreignkey")
    op.drop_index("ix_game_status", table_name="game")
    for statement in DOCUMENT_TYPES:
        op.execute(statement)
    op.execute(GAME_WRITE)


def downgrade() -> None:
    op.execute(_previous("0021_typed_documents").GAME_WRITE)
    op.execute("DROP TYPE game_write_document")
    op.execute("DROP TYPE game_write_step")
    op.create_index("ix_game_status", "game", ["status"], unique=False)
    for table in IMPLIED_TENANT_KEYS:
        op.create_foreign_key(f"fk_{table}_tenant_id_tenant", table, "tenant", ["tenant_id"], ["id"])


def _previous(revision_file: str) -> ModuleType:
    """An earlier migration, for the text of what it created (a migration file never changes)."""
    path = Path(__file__).with_name(f"{revision_file}.py")
    spec = importlib.util.spec_from_file_location(f"pokna_migration_{revision_file}", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
