-- ledger_move(tenant, move json): a keyed deposit or withdrawal in one call. Posts the move's batch through
-- ledger_post() (a refusal raises PK402, its figures as JSON in the detail, so nothing is written), then
-- writes its webhook announcements and the Idempotency-Key's stored answer, and returns the answer's body.
-- The move (pokna.ledger.move_document, version 1; a move or a batch of another version is refused, 22023)
-- carries the answer's body and each announcement's body as JSON objects; what only the ledger's lock can
-- tell is set on them by name: the answer's `seq`, `prev_hash`, `hash` and `balance` (the wallet's balance
-- after the move), an announcement's `data.ledger_seq` and `data.balance`. Each object is rebuilt member by
-- member in its order (json_each, json_object_agg: `json` keeps order and each value's text, where jsonb
-- would sort the members; each computed before its INSERT, which on Citus takes no subquery), and the
-- answer's text is what is stored and returned. Rows are inserted one INSERT ... VALUES each, as in
-- game_write(). Called by pokna.ledger.moving (LEDGER_MOVE).
--
-- Last set by migrations/versions/0021_typed_documents.py (members set by name in place of format()
-- templates; templates since 0017_ledger_post_document, created by 0010_ledger_move).
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
$$;
