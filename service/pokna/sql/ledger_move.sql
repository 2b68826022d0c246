-- ledger_move(tenant, move json): a keyed deposit or withdrawal in one call. Posts the move's batch through
-- ledger_post() (a refusal raises PK402, its figures as JSON in the detail, so nothing is written), then
-- writes its webhook announcements and the Idempotency-Key's stored answer, and returns the answer's body.
-- What only the ledger's lock can tell comes from ledger_post(): the client sends the answer's body and each
-- announcement's body as format() templates (every literal % doubled) whose arguments are %1$s the seq,
-- %2$s the previous hash and %3$s the hash (each a JSON string), %4$s the wallet's balance after the move
-- (pokna.ledger.moving). Rows are inserted one INSERT ... VALUES each, as in game_write(). Called by
-- pokna.ledger.moving (LEDGER_MOVE).
--
-- Last set by migrations/versions/0017_ledger_post_document.py (format() templates in place of placeholders
-- replaced by ledger_move_fill(); created by 0010_ledger_move).
--
-- This file is the function as the database holds it at the head migration. To change it, edit this file and
-- write a new migration that applies a frozen copy of the new text (a migration never reads this file:
-- history must not move when the source does). tests/db/test_sql_source.py fails while the database and this
-- file disagree. docs/architecture.md, "The SQL in force".

CREATE OR REPLACE FUNCTION ledger_move(p_tenant_id text, p_move json) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    v_post record;
    v_balance bigint;
    v_message record;
    v_answer text;
BEGIN
    SELECT * INTO v_post FROM ledger_post(p_tenant_id, (p_move->'batch')::jsonb);
    IF v_post.status <> 'posted' THEN
        RAISE EXCEPTION USING ERRCODE = 'PK402', MESSAGE = 'ledger_post: ' || v_post.status,
            DETAIL = json_build_object('status', v_post.status, 'account_id', v_post.refused_account_id,
                'balance', v_post.refused_balance, 'change', v_post.refused_change)::text;
    END IF;
    v_balance := v_post.held_balances[array_position(v_post.held_account_ids, p_move->>'wallet_id')];

    FOR v_message IN SELECT * FROM json_populate_recordset(NULL::webhook_event, p_move->'outbox') LOOP
        INSERT INTO webhook_event (id, tenant_id, type, ordering_key, body, occurred_at)
        VALUES (v_message.id, p_tenant_id, v_message.type, v_message.ordering_key,
            format(v_message.body, v_post.first_seq, to_json(v_post.first_prev_hash), to_json(v_post.hashes[1]),
                v_balance),
            v_message.occurred_at);
    END LOOP;

    v_answer := format(p_move->'answer'->>'body', v_post.first_seq, to_json(v_post.first_prev_hash),
        to_json(v_post.hashes[1]), v_balance);
    UPDATE idempotency_record SET response_status = (p_move->'answer'->>'status')::int,
        response_body = v_answer, locked_until = NULL
    WHERE tenant_id = p_tenant_id AND key = p_move->'answer'->>'key';
    RETURN v_answer;
END
$$;
