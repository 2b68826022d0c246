"""game_write(tenant, write json): everything one game request writes, in one round trip.

A game action used to write in up to five statements under the game's lock (ledger_post(), the step's
game row with its events and rolls, one outbox row per announcement through the ORM, the stored answer
of its Idempotency-Key), each one round trip while the lock was held. Now the dealer gathers all of it in
Python (pokna.dealer.writes.GameWrites) and sends it as one JSON document; the client pipelines COMMIT
behind it, so an action is three round trips: authenticate and claim its key; BEGIN, hold the claim and
lock the game; this call and COMMIT.

The document (`p_write`), every value as the row it becomes:
- "steps": one per rules step, in order (deadlines that passed, then the action), each
  {"game_id", "previous_version", "game" (the mutable columns), "seats" (client seeds fixed by the step),
  "events" (game_event rows), "money" ([{"n", "seq", "occurred_at", "head"}]: the money_moved event of the
  batch's n-th transaction (1-based), its payload `head` followed by its ledger seq, known only once posted), "rolls" (game_roll rows), "batch"
  (ledger_post()'s document, or null when the step moves no money)}.
- "outbox": webhook_event rows (id, type, ordering_key, body, occurred_at).
- "answer": {"key", "status", "body"}: the stored answer of the request's Idempotency-Key, or null.

Anything that cannot be written raises, so the transaction (and the COMMIT pipelined behind the call)
ends with nothing written: SQLSTATE PK409 when ledger_post() refused (its status in the message, its
figures as JSON in the detail: a wallet moved after the game was read, and the request is decided again
from a fresh read), PK500 when the game is not at the version its lock read (never, while the caller holds
the lock).

Every statement names the tenant, so the function can be delegated to the tenant's shard later.

Revision ID: 0009_game_write
Revises: 0008_rake
Create Date: 2026-12-02
"""

from __future__ import annotations

from alembic import op

revision = "0009_game_write"
down_revision = "0008_rake"
branch_labels = None
depends_on = None

GAME_WRITE = """
CREATE FUNCTION game_write(p_tenant_id text, p_write json) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_step json;
    v_game_id text;
    v_post record;
    v_first_seq bigint;
    v_count int;
BEGIN
    FOR v_step IN SELECT value FROM json_array_elements(p_write->'steps') LOOP
        v_game_id := v_step->>'game_id';
        v_first_seq := NULL;
        IF json_typeof(v_step->'batch') = 'object' THEN
            SELECT * INTO v_post FROM ledger_post(p_tenant_id, (v_step->'batch')::jsonb);
            IF v_post.status <> 'posted' THEN
                RAISE EXCEPTION USING ERRCODE = 'PK409', MESSAGE = 'ledger_post: ' || v_post.status,
                    DETAIL = json_build_object('status', v_post.status,
                        'account_id', v_post.refused_account_id, 'balance', v_post.refused_balance,
                        'change', v_post.refused_change)::text;
            END IF;
            v_first_seq := v_post.first_seq;
        END IF;

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
            WHERE game_seat.game_id = v_game_id AND game_seat.seat = seeded.seat;
        END IF;

        INSERT INTO game_event (game_id, seq, kind, payload, occurred_at)
        SELECT v_game_id, event.seq, event.kind, event.payload, event.occurred_at
        FROM json_populate_recordset(NULL::game_event, v_step->'events') AS event;
        IF v_first_seq IS NOT NULL THEN
            INSERT INTO game_event (game_id, seq, kind, payload, occurred_at)
            SELECT v_game_id, money.seq, 'money_moved',
                (money.head || ',"ledger_seq":' || (v_first_seq + money.n - 1) || '}')::json, money.occurred_at
            FROM json_to_recordset(v_step->'money') AS money(n int, seq int, occurred_at timestamptz, head text);
        END IF;
        INSERT INTO game_roll (game_id, nonce, seat, purpose, face, color, rolled_at)
        SELECT v_game_id, roll.nonce, roll.seat, roll.purpose, roll.face, roll.color, roll.rolled_at
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
END
$$
"""


def upgrade() -> None:
    op.execute(GAME_WRITE)


def downgrade() -> None:
    op.execute("DROP FUNCTION IF EXISTS game_write(text, json)")
