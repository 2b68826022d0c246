"""game_write() takes the tenant's ledger head last: every other row of the request is written first, then
the postings and the money events that name their ledger seq (issue 25, "Lift the one-tenant cap").

Every posting of a tenant waits for its ledger head (`ledger_head`, one row per tenant: the hash chain's
last seq and hash), and holds it until COMMIT. 0009/0011's `game_write()` called `ledger_post()` first in
each step, so the head was held while the function went on to update the game, its seats, insert the
step's events and rolls, the webhook outbox rows and the stored answer, all of which need nothing the
head decides. Now those come first, under the locks the request already holds (the game row and its
Idempotency-Key claim), and each step's posting and money events last, with COMMIT pipelined right behind
(pokna.dealer.playing): the head is held for `ledger_post()`, the money events and the COMMIT only.

The lock order does not change: the game row (taken before the call), then the head, then the accounts by
ascending id inside `ledger_post()`. A refusal (PK409) still raises, so nothing of the request is
written; it now raises after the other rows were written and are rolled back with it, which costs only
on that rare path. What is written is the same, row for row (tests/dealer hold the documents' effects).

Revision ID: 0012_head_last
Revises: 0011_distribution_keys
Create Date: 2026-12-02
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from alembic import op

revision = "0012_head_last"
down_revision = "0011_distribution_keys"
branch_labels = None
depends_on = None

GAME_WRITE = """
CREATE OR REPLACE FUNCTION game_write(p_tenant_id text, p_write json) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_step json;
    v_game_id text;
    v_post record;
    v_count int;
BEGIN
    -- First everything that needs no ledger lock.
    FOR v_step IN SELECT value FROM json_array_elements(p_write->'steps') LOOP
        v_game_id := v_step->>'game_id';
        UPDATE game SET status = saved.status, state = saved.state, version = saved.version,
            event_count = saved.event_count, revealed_server_seed = saved.revealed_server_seed,
            game_client_seed = saved.game_client_seed, proof = saved.proof,
            turn_deadline_at = saved.turn_deadline_at, started_at = saved.started_at, ended_at = saved.ended_at
        FROM json_populate_record(NULL::game, v_step->'game') AS saved
        WHERE game.id = v_game_id AND game.tenant_id = p_tenant_id
            AND game.version = (v_step->>'previous_version')::int;
        GET DIAGNOSTICS v_count = ROW_COUNT;
        IF v_count <> 1 THEN
            RAISE EXCEPTION USING ERRCODE = 'PK500',
                MESSAGE = 'game ' || v_game_id || ' changed under its row lock';
        END IF;

        IF json_array_length(v_step->'seats') > 0 THEN
            UPDATE game_seat SET client_seed = seeded.client_seed, client_seed_source = seeded.client_seed_source
            FROM json_populate_recordset(NULL::game_seat, v_step->'seats') AS seeded
            WHERE game_seat.tenant_id = p_tenant_id AND game_seat.game_id = v_game_id
                AND game_seat.seat = seeded.seat;
        END IF;

        INSERT INTO game_event (tenant_id, game_id, seq, kind, payload, occurred_at)
        SELECT p_tenant_id, v_game_id, event.seq, event.kind, event.payload, event.occurred_at
        FROM json_populate_recordset(NULL::game_event, v_step->'events') AS event;
        INSERT INTO game_roll (tenant_id, game_id, nonce, seat, purpose, face, color, rolled_at)
        SELECT p_tenant_id, v_game_id, roll.nonce, roll.seat, roll.purpose, roll.face, roll.color, roll.rolled_at
        FROM json_populate_recordset(NULL::game_roll, v_step->'rolls') AS roll;
    END LOOP;

    INSERT INTO webhook_event (id, tenant_id, type, ordering_key, body, occurred_at)
    SELECT message.id, p_tenant_id, message.type, message.ordering_key, message.body, message.occurred_at
    FROM json_populate_recordset(NULL::webhook_event, p_write->'outbox') AS message;

    IF json_typeof(p_write->'answer') = 'object' THEN
        UPDATE idempotency_record SET response_status = (p_write->'answer'->>'status')::int,
            response_body = p_write->'answer'->>'body', locked_until = NULL
        WHERE tenant_id = p_tenant_id AND key = p_write->'answer'->>'key';
    END IF;

    -- Then the postings, in step order: the first takes the tenant's head, held until COMMIT.
    FOR v_step IN SELECT value FROM json_array_elements(p_write->'steps') LOOP
        CONTINUE WHEN json_typeof(v_step->'batch') IS DISTINCT FROM 'object';
        SELECT * INTO v_post FROM ledger_post(p_tenant_id, (v_step->'batch')::jsonb);
        IF v_post.status <> 'posted' THEN
            RAISE EXCEPTION USING ERRCODE = 'PK409', MESSAGE = 'ledger_post: ' || v_post.status,
                DETAIL = json_build_object('status', v_post.status,
                    'account_id', v_post.refused_account_id, 'balance', v_post.refused_balance,
                    'change', v_post.refused_change)::text;
        END IF;
        INSERT INTO game_event (tenant_id, game_id, seq, kind, payload, occurred_at)
        SELECT p_tenant_id, v_step->>'game_id', money.seq, 'money_moved',
            (money.head || ',"ledger_seq":' || (v_post.first_seq + money.n - 1) || '}')::json, money.occurred_at
        FROM json_to_recordset(v_step->'money') AS money(n int, seq int, occurred_at timestamptz, head text);
    END LOOP;
END
$$
"""


def upgrade() -> None:
    op.execute(GAME_WRITE)


def downgrade() -> None:
    op.execute(_previous("0011_distribution_keys").GAME_WRITE)


def _previous(revision_file: str) -> ModuleType:
    """An earlier migration, for the text of what it created (a migration file never changes)."""
    path = Path(__file__).with_name(f"{revision_file}.py")
    spec = importlib.util.spec_from_file_location(f"pokna_migration_{revision_file}", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
