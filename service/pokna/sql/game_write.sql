-- game_write(tenant, write json): everything one game request writes, in one call. For each rules step: the
-- game row (refused, PK500, unless it is still the version that was read), its seats' client seeds, its
-- events and rolls; then the webhook outbox rows and the Idempotency-Key's stored answer; then, last, each
-- step's posting batch through ledger_post() (the first takes the chain's head, held until COMMIT) and its
-- money events, whose payload's `ledger_seq` is set by name to the ledger seq the posting got (the payload
-- rebuilt member by member in its order: json_each, json_object_agg; before its INSERT, which on Citus
-- takes no subquery). A refused posting raises PK409 (a wallet moved after the read), so nothing is
-- written. The write (pokna.dealer.writes.GameWrite) and each step's batch (pokna.ledger.posting_batch)
-- are version 1: another version is refused before anything is written (22023). Rows are inserted one
-- INSERT ... VALUES each: on Citus that is routed to the tenant's shard, where an INSERT ... SELECT from the
-- document takes the pull-and-COPY path (docs/scaling.md). Called by pokna.dealer.writes (GAME_WRITE);
-- docs/ledger.md, "The hot paths' one call".
--
-- The document is read once into the composite types game_write_document (version text, steps
-- game_write_step[], outbox json, answer json) and game_write_step (game_id text, previous_version int, game,
-- seats, events, rolls, batch, money: json), made by migrations/versions/0024_game_write_checks.py.
--
-- Last set by migrations/versions/0024_game_write_checks.py (the document read once into its types, its
-- arrays walked by index in expressions; created by 0009_game_write, every statement naming the tenant since
-- 0011_distribution_keys, head last since 0012_head_last, rows inserted one at a time since
-- 0017_ledger_post_document, versions checked and a money event's ledger_seq set by name since
-- 0021_typed_documents).
--
-- This file is the function as the database holds it at the head migration. To change it, edit this file and
-- write a new migration that applies a frozen copy of the new text (a migration never reads this file:
-- history must not move when the source does). tests/db/test_sql_source.py fails while the database and this
-- file disagree. docs/architecture.md, "The SQL in force".

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
$$;
