"""Documents that are types (issue 43, item 4): `ledger_move()` and `game_write()` set what only the ledger's
lock can tell on named members instead of patching text, and read a version.

- `ledger_move(tenant, move json)`: the answer's body and each announcement's body arrive as JSON objects
  (pokna.ledger.move_document) instead of format() templates; the function sets the answer's `seq`,
  `prev_hash`, `hash` and `balance` and an announcement's `data.ledger_seq` and `data.balance` by name,
  rebuilding each object member by member in its order (json_each, json_object_agg on `json`, which keeps
  the members' order and each value's text). The answer's stored text is the rebuilt object's.
- `game_write(tenant, write json)`: a money event's payload arrives as a JSON object with `ledger_seq` null
  (pokna.dealer.game_write_document) instead of its text cut before its last brace; the function sets
  `ledger_seq` by name.
- Both refuse a document, or a posting batch inside one (pokna.ledger.posting_batch), whose `version` is
  not 1 (SQLSTATE 22023, the versions in the message). ledger_post() is unchanged: its callers check the
  batch's version before they hand it on.

Code that sends the previous documents (a process still running the previous release) is refused by the new
functions; deploy the code with the migration. The downgrade restores 0017's two functions.

Revision ID: 0021_typed_documents
Revises: 0020_posting_checks
Create Date: 2026-12-06
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from alembic import op

revision = "0021_typed_documents"
down_revision = "0020_posting_checks"
branch_labels = None
depends_on = None

LEDGER_MOVE = """
CREATE OR REPLACE FUNCTION ledger_move(p_tenant_id text, p_move json) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    v_post record;
    v_balance bigint;
    v_message record;
    v_body text;
    v_answer text;
BEGIN
    IF (p_move->>'version') IS DISTINCT FROM '1' OR (p_move->'batch'->>'version') IS DISTINCT FROM '1' THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('ledger_move: a move of version %s with a batch of version %s; this function '
                'reads version 1 of both', coalesce(p_move->>'version', 'none'),
                coalesce(p_move->'batch'->>'version', 'none'));
    END IF;
    SELECT * INTO v_post FROM ledger_post(p_tenant_id, (p_move->'batch')::jsonb);
    IF v_post.status <> 'posted' THEN
        RAISE EXCEPTION USING ERRCODE = 'PK402', MESSAGE = 'ledger_post: ' || v_post.status,
            DETAIL = json_build_object('status', v_post.status, 'account_id', v_post.refused_account_id,
                'balance', v_post.refused_balance, 'change', v_post.refused_change)::text;
    END IF;
    v_balance := v_post.held_balances[array_position(v_post.held_account_ids, p_move->>'wallet_id')];

    FOR v_message IN
        SELECT * FROM json_to_recordset(p_move->'outbox')
            AS message(id text, type text, ordering_key text, body json, occurred_at timestamptz)
    LOOP
        SELECT json_object_agg(body.key, CASE body.key
                WHEN 'data' THEN (
                    SELECT json_object_agg(data.key, CASE data.key
                            WHEN 'ledger_seq' THEN to_json(v_post.first_seq)
                            WHEN 'balance' THEN to_json(v_balance)
                            ELSE data.value END ORDER BY data.n)
                    FROM json_each(body.value) WITH ORDINALITY AS data(key, value, n))
                ELSE body.value END ORDER BY body.n)::text
            INTO v_body FROM json_each(v_message.body) WITH ORDINALITY AS body(key, value, n);
        INSERT INTO webhook_event (id, tenant_id, type, ordering_key, body, occurred_at)
        VALUES (v_message.id, p_tenant_id, v_message.type, v_message.ordering_key, v_body, v_message.occurred_at);
    END LOOP;

    SELECT json_object_agg(body.key, CASE body.key
            WHEN 'seq' THEN to_json(v_post.first_seq)
            WHEN 'prev_hash' THEN to_json(v_post.first_prev_hash)
            WHEN 'hash' THEN to_json(v_post.hashes[1])
            WHEN 'balance' THEN to_json(v_balance)
            ELSE body.value END ORDER BY body.n)::text
        INTO v_answer FROM json_each(p_move->'answer'->'body') WITH ORDINALITY AS body(key, value, n);
    UPDATE idempotency_record SET response_status = (p_move->'answer'->>'status')::int,
        response_body = v_answer, locked_until = NULL
    WHERE tenant_id = p_tenant_id AND key = p_move->'answer'->>'key';
    RETURN v_answer;
END
$$
"""

GAME_WRITE = """
CREATE OR REPLACE FUNCTION game_write(p_tenant_id text, p_write json) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_step json;
    v_game_id text;
    v_post record;
    v_event record;
    v_roll record;
    v_message record;
    v_money record;
    v_payload json;
    v_count int;
    v_version text;
BEGIN
    IF (p_write->>'version') IS DISTINCT FROM '1' THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format(
            'game_write: a write of version %s; this function reads version 1',
            coalesce(p_write->>'version', 'none'));
    END IF;
    SELECT coalesce(step.value->'batch'->>'version', 'none') INTO v_version
        FROM json_array_elements(p_write->'steps') AS step(value)
        WHERE json_typeof(step.value->'batch') = 'object' AND (step.value->'batch'->>'version') IS DISTINCT FROM '1'
        LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format(
            'game_write: a posting batch of version %s; this function reads version 1', v_version);
    END IF;
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

        FOR v_event IN SELECT * FROM json_populate_recordset(NULL::game_event, v_step->'events') LOOP
            INSERT INTO game_event (tenant_id, game_id, seq, kind, payload, occurred_at)
            VALUES (p_tenant_id, v_game_id, v_event.seq, v_event.kind, v_event.payload, v_event.occurred_at);
        END LOOP;
        FOR v_roll IN SELECT * FROM json_populate_recordset(NULL::game_roll, v_step->'rolls') LOOP
            INSERT INTO game_roll (tenant_id, game_id, nonce, seat, purpose, face, color, rolled_at)
            VALUES (p_tenant_id, v_game_id, v_roll.nonce, v_roll.seat, v_roll.purpose, v_roll.face, v_roll.color,
                v_roll.rolled_at);
        END LOOP;
    END LOOP;

    FOR v_message IN SELECT * FROM json_populate_recordset(NULL::webhook_event, p_write->'outbox') LOOP
        INSERT INTO webhook_event (id, tenant_id, type, ordering_key, body, occurred_at)
        VALUES (v_message.id, p_tenant_id, v_message.type, v_message.ordering_key, v_message.body,
            v_message.occurred_at);
    END LOOP;

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
        FOR v_money IN
            SELECT * FROM json_to_recordset(v_step->'money') AS money(n int, seq int, occurred_at timestamptz,
                payload json)
        LOOP
            SELECT json_object_agg(member.key, CASE member.key
                    WHEN 'ledger_seq' THEN to_json(v_post.first_seq + v_money.n - 1)
                    ELSE member.value END ORDER BY member.n)
                INTO v_payload FROM json_each(v_money.payload) WITH ORDINALITY AS member(key, value, n);
            INSERT INTO game_event (tenant_id, game_id, seq, kind, payload, occurred_at)
            VALUES (p_tenant_id, v_step->>'game_id', v_money.seq, 'money_moved', v_payload, v_money.occurred_at);
        END LOOP;
    END LOOP;
END
$$
"""


def upgrade() -> None:
    op.execute(LEDGER_MOVE)
    op.execute(GAME_WRITE)


def downgrade() -> None:
    previous = _previous("0017_ledger_post_document")
    op.execute(previous.LEDGER_MOVE)
    op.execute(previous.GAME_WRITE)


def _previous(revision_file: str) -> ModuleType:
    """An earlier migration, for the text of what it created (a migration file never changes)."""
    path = Path(__file__).with_name(f"{revision_file}.py")
    spec = importlib.util.spec_from_file_location(f"pokna_migration_{revision_file}", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
