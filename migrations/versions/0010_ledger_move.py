"""ledger_move(tenant, move json): a deposit or a withdrawal, its announcement and its stored answer, in
one round trip.

A keyed deposit was eleven round trips. Now (pokna.ledger.moving): authenticate and claim the key; BEGIN,
hold the claim and read the wallet and the funding account; this call and COMMIT. What only the ledger's
lock can tell (the seq, the hashes, the balance after) is written into the answer and the announcement
here: the client sends both as JSON text with a placeholder for each (`fill`: placeholder -> field), a
random token per request, and this function puts the posted values in their place. Each placeholder is a
JSON value of its own (a number, or a string in quotes), so it cannot be confused with anything the
client's own text holds, where a quote is always escaped.

The document (`p_move`): "batch" (ledger_post()'s), "wallet_id", "fill" {"seq", "prev_hash", "hash",
"balance": the placeholder text of each}, "outbox" (webhook_event rows, their body a template), "answer"
{"key", "status", "body" (a template)}. Returns the answer's body, filled.

A refusal by ledger_post() raises SQLSTATE PK402 (its status in the message; the culprit's figures as JSON
in the detail), so nothing is written, COMMIT included.

Revision ID: 0010_ledger_move
Revises: 0009_game_write
Create Date: 2026-12-02
"""

from __future__ import annotations

from alembic import op

revision = "0010_ledger_move"
down_revision = "0009_game_write"
branch_labels = None
depends_on = None

LEDGER_MOVE = """
CREATE FUNCTION ledger_move(p_tenant_id text, p_move json) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    v_post record;
    v_fill json := p_move->'fill';
    v_balance bigint;
    v_answer text;
BEGIN
    SELECT * INTO v_post FROM ledger_post(p_tenant_id, (p_move->'batch')::jsonb);
    IF v_post.status <> 'posted' THEN
        RAISE EXCEPTION USING ERRCODE = 'PK402', MESSAGE = 'ledger_post: ' || v_post.status,
            DETAIL = json_build_object('status', v_post.status, 'account_id', v_post.refused_account_id,
                'balance', v_post.refused_balance, 'change', v_post.refused_change)::text;
    END IF;
    v_balance := v_post.held_balances[array_position(v_post.held_account_ids, p_move->>'wallet_id')];

    INSERT INTO webhook_event (id, tenant_id, type, ordering_key, body, occurred_at)
    SELECT message.id, p_tenant_id, message.type, message.ordering_key,
        ledger_move_fill(message.body, v_fill, v_post.first_seq, v_post.first_prev_hash, v_post.hashes[1],
            v_balance),
        message.occurred_at
    FROM json_populate_recordset(NULL::webhook_event, p_move->'outbox') AS message;

    v_answer := ledger_move_fill(p_move->'answer'->>'body', v_fill, v_post.first_seq, v_post.first_prev_hash,
        v_post.hashes[1], v_balance);
    UPDATE idempotency_record SET response_status = (p_move->'answer'->>'status')::int,
        response_body = v_answer, locked_until = NULL
    WHERE tenant_id = p_tenant_id AND key = p_move->'answer'->>'key';
    RETURN v_answer;
END
$$
"""

LEDGER_MOVE_FILL = """
CREATE FUNCTION ledger_move_fill(p_template text, p_fill json, p_seq bigint, p_prev_hash text, p_hash text,
    p_balance bigint) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT replace(replace(replace(replace(p_template,
        p_fill->>'seq', p_seq::text),
        p_fill->>'prev_hash', '"' || p_prev_hash || '"'),
        p_fill->>'hash', '"' || p_hash || '"'),
        p_fill->>'balance', p_balance::text)
$$
"""


def upgrade() -> None:
    op.execute(LEDGER_MOVE_FILL)
    op.execute(LEDGER_MOVE)


def downgrade() -> None:
    op.execute("DROP FUNCTION IF EXISTS ledger_move(text, json)")
    op.execute("DROP FUNCTION IF EXISTS ledger_move_fill(text, json, bigint, text, text, bigint)")
