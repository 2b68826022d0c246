-- ledger_move(tenant, move json): a keyed deposit or withdrawal in one call. Posts the move's batch through
-- ledger_post() (a refusal raises PK402, its figures as JSON in the detail, so nothing is written), then
-- writes its webhook announcement and the Idempotency-Key's stored answer, with what only the lock could tell
-- (seq, prev_hash, hash, the wallet's balance) put in place of the client's placeholders by
-- ledger_move_fill(). Returns the answer's body. Called by pokna.ledger.moving (LEDGER_MOVE).
--
-- Last set by migrations/versions/0010_ledger_move.py, which created it.
--
-- This file is the function as the database holds it at the head migration. To change it, edit this file and
-- write a new migration that applies a frozen copy of the new text (a migration never reads this file:
-- history must not move when the source does). tests/db/test_sql_source.py fails while the database and this
-- file disagree. docs/architecture.md, "The SQL in force".

CREATE OR REPLACE FUNCTION ledger_move(p_tenant_id text, p_move json) RETURNS text LANGUAGE plpgsql AS $$
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
$$;
