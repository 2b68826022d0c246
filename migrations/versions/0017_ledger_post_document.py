"""`ledger_post()` reads one document of transactions and their postings; the ledger-level idempotency key
goes; `ledger_move()` fills format() templates (issue 35).

- `ledger_post(tenant, batch jsonb)` keeps its signature and its answer. The batch was 21 arrays by column
  (`t_id`, `t_kind`, ..., `p_transaction`, `p_leg`, ...); it is now `{chain, accounts, expected_balances:
  {account: balance}, transactions: [{id, kind, reference, metadata, created_at, before_prev, before_seq,
  rest, postings: [{id, account_id, amount, currency}]}]}` (service/pokna/sql/ledger_post.sql). The missing
  accounts, the expected balances and the running balances (a window sum per account, in leg order) are
  checked by one statement each instead of loops over arrays. The inserts stay one row each, each
  transaction followed by its postings: an `INSERT ... SELECT` from the document (one per table) was
  measured slower on Citus, where it takes the pull-and-COPY path (0016; bench/README.md, "Citus").
- `journal_transaction.idempotency_key` and `request_hash`, their unique constraint and `ledger_post()`'s
  `replay` branch go: both ways into the ledger (`game_write()`, `ledger_move()`) passed NULL since the
  synchronous posting API was removed; a request's idempotency is the Idempotency-Key's
  (`idempotency_record`).
- `ledger_move(tenant, move json)` takes its answer's and announcements' bodies as format() templates
  (`%1$s` the seq, `%2$s` and `%3$s` the hashes as JSON strings, `%4$s` the wallet's balance) instead of
  placeholders with a `fill` map, and `ledger_move_fill()` is dropped.

- `game_write()` and `ledger_move()` insert their other rows (events, rolls, outbox rows, money events) one
  `INSERT ... VALUES` each instead of one `INSERT ... SELECT` from the document per table, for the same
  reason; `game_write()` passes each step's batch to `ledger_post()` unchanged and reads the same answer.

Code that sends the previous documents (a process still running the previous release) is refused by
the new functions; deploy the code with the migration.

The downgrade restores the columns (empty), their constraint and 0016's `ledger_post()`, 0012's
`game_write()`, 0010's `ledger_move()` and `ledger_move_fill()`.

Revision ID: 0017_ledger_post_document
Revises: 0016_ledger_post_row_inserts
Create Date: 2026-12-03
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import sqlalchemy as sa
from alembic import op

revision = "0017_ledger_post_document"
down_revision = "0016_ledger_post_row_inserts"
branch_labels = None
depends_on = None

LEDGER_POST = """
CREATE OR REPLACE FUNCTION ledger_post(
    p_tenant_id text,
    p_batch jsonb,
    OUT status text,
    OUT refused_account_id text,
    OUT refused_balance bigint,
    OUT refused_change bigint,
    OUT first_seq bigint,
    OUT first_prev_hash text,
    OUT hashes text[],
    OUT held_account_ids text[],
    OUT held_balances bigint[]
) RETURNS record LANGUAGE plpgsql AS $$
DECLARE
    v_chain smallint := coalesce((p_batch->>'chain')::smallint, 0);
    v_accounts text[] := ARRAY(SELECT jsonb_array_elements_text(p_batch->'accounts'));
    v_kinds text[];
    v_seq bigint;
    v_hash text;
    v_prev_hash text;
    v_refused record;
    v_transaction record;
    v_posting record;
BEGIN
    SELECT last_seq, last_hash INTO v_seq, v_hash FROM ledger_head
        WHERE tenant_id = p_tenant_id AND chain = v_chain FOR UPDATE;
    IF NOT FOUND THEN
        IF NOT EXISTS (SELECT 1 FROM tenant WHERE id = p_tenant_id) THEN
            status := 'tenant_not_found';
            RETURN;
        END IF;
        INSERT INTO ledger_head (tenant_id, chain, last_seq, last_hash)
            VALUES (p_tenant_id, v_chain, 0, '0000000000000000000000000000000000000000000000000000000000000000')
            ON CONFLICT (tenant_id, chain) DO NOTHING;
        SELECT last_seq, last_hash INTO v_seq, v_hash FROM ledger_head
            WHERE tenant_id = p_tenant_id AND chain = v_chain FOR UPDATE;
    END IF;

    -- The ledger's one lock order: a head, then accounts by ascending id (one chain per unit of work).
    -- NO KEY: a balance change never touches the key (docs/ledger.md, "Locking and concurrency").
    SELECT array_agg(id), array_agg(kind), array_agg(balance) INTO held_account_ids, v_kinds, held_balances
        FROM (
            SELECT id, kind, balance FROM account
            WHERE tenant_id = p_tenant_id AND id = ANY(v_accounts) ORDER BY id FOR NO KEY UPDATE
        ) AS locked;
    SELECT wanted.id INTO refused_account_id FROM unnest(v_accounts) WITH ORDINALITY AS wanted(id, n)
        WHERE array_position(held_account_ids, wanted.id) IS NULL ORDER BY wanted.n LIMIT 1;
    IF FOUND THEN
        status := 'account_not_found';
        RETURN;
    END IF;

    IF EXISTS (
        SELECT 1 FROM jsonb_each_text(p_batch->'expected_balances') AS expected(account_id, balance)
        WHERE held_balances[array_position(held_account_ids, expected.account_id)] <> expected.balance::bigint
    ) THEN
        status := 'balances_changed';
        RETURN;
    END IF;

    -- Every leg in order (transaction, then leg) on its account's running balance: the first that would
    -- take a balance beyond 10^18 (MAX_ABS_BALANCE) or a wallet or pot below zero refuses the batch.
    SELECT leg.account_id, leg.amount, leg.after INTO v_refused
        FROM (
            SELECT p.account_id, p.amount, t.n, p.leg,
                held_balances[array_position(held_account_ids, p.account_id)]
                    + sum(p.amount) OVER (PARTITION BY p.account_id ORDER BY t.n, p.leg) AS after
            FROM jsonb_array_elements(p_batch->'transactions') WITH ORDINALITY AS t(body, n),
                ROWS FROM (jsonb_to_recordset(t.body->'postings') AS (account_id text, amount bigint))
                    WITH ORDINALITY AS p(account_id, amount, leg)
        ) AS leg
        WHERE abs(leg.after) > 1000000000000000000
            OR (leg.after < 0 AND v_kinds[array_position(held_account_ids, leg.account_id)]
                IN ('player_wallet', 'game_pot'))
        ORDER BY leg.n, leg.leg LIMIT 1;
    IF FOUND THEN
        refused_account_id := v_refused.account_id;
        IF abs(v_refused.after) > 1000000000000000000 THEN
            status := 'balance_out_of_range';
            refused_balance := v_refused.after;
        ELSE
            status := 'insufficient_funds';
            refused_balance := v_refused.after - v_refused.amount;
            refused_change := v_refused.amount;
        END IF;
        RETURN;
    END IF;
    held_balances := ARRAY(
        SELECT held.balance + coalesce(sum(p.amount), 0)
        FROM unnest(held_account_ids, held_balances) WITH ORDINALITY AS held(id, balance, n)
            LEFT JOIN (
                SELECT p.account_id, p.amount
                FROM jsonb_array_elements(p_batch->'transactions') AS t(body),
                    jsonb_to_recordset(t.body->'postings') AS p(account_id text, amount bigint)
            ) AS p ON p.account_id = held.id
        GROUP BY held.n, held.balance ORDER BY held.n
    );

    -- Then each transaction in seq order: hashed onto the previous one, sha256(before_prev || prev_hash ||
    -- before_seq || seq || rest) over the parts the client encoded (pokna_verify.ledger.chain.hash_parts),
    -- inserted (the chain-link trigger finds its predecessor), and its postings after it in leg order (each
    -- applied to its balance by its trigger, in the order the running balances were checked in). One row per
    -- INSERT ... VALUES: on Citus it is routed to the tenant's shard, where an INSERT ... SELECT from the
    -- document goes through Citus's pull-and-COPY path and costs more than the rows it saves
    -- (0016_ledger_post_row_inserts, 0017_ledger_post_document; bench/README.md, "Citus").
    first_seq := v_seq + 1;
    first_prev_hash := v_hash;
    hashes := '{}';
    FOR v_transaction IN
        SELECT * FROM jsonb_to_recordset(p_batch->'transactions') AS t(id text, kind text, reference text,
            metadata text, created_at timestamptz, before_prev bytea, before_seq bytea, rest bytea, postings jsonb)
    LOOP
        v_seq := v_seq + 1;
        v_prev_hash := v_hash;
        v_hash := encode(sha256(v_transaction.before_prev || convert_to(v_prev_hash, 'UTF8')
            || v_transaction.before_seq || convert_to(v_seq::text, 'UTF8') || v_transaction.rest), 'hex');
        hashes := hashes || v_hash;
        INSERT INTO journal_transaction (id, tenant_id, chain, seq, kind, reference, metadata, posting_count,
            prev_hash, hash, created_at)
        VALUES (v_transaction.id, p_tenant_id, v_chain, v_seq, v_transaction.kind, v_transaction.reference,
            v_transaction.metadata::json, jsonb_array_length(v_transaction.postings), v_prev_hash, v_hash,
            v_transaction.created_at);
        FOR v_posting IN
            SELECT * FROM ROWS FROM (jsonb_to_recordset(v_transaction.postings)
                    AS (id text, account_id text, amount bigint, currency text))
                WITH ORDINALITY AS p(id, account_id, amount, currency, n)
        LOOP
            INSERT INTO posting (id, tenant_id, transaction_id, leg, account_id, amount, currency)
            VALUES (v_posting.id, p_tenant_id, v_transaction.id, v_posting.n - 1, v_posting.account_id,
                v_posting.amount, v_posting.currency);
        END LOOP;
    END LOOP;

    UPDATE ledger_head SET last_seq = v_seq, last_hash = v_hash WHERE tenant_id = p_tenant_id AND chain = v_chain;
    status := 'posted';
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
                head text)
        LOOP
            INSERT INTO game_event (tenant_id, game_id, seq, kind, payload, occurred_at)
            VALUES (p_tenant_id, v_step->>'game_id', v_money.seq, 'money_moved',
                (v_money.head || ',"ledger_seq":' || (v_post.first_seq + v_money.n - 1) || '}')::json,
                v_money.occurred_at);
        END LOOP;
    END LOOP;
END
$$
"""

LEDGER_MOVE = """
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
$$
"""


def upgrade() -> None:
    op.execute(LEDGER_POST)
    op.execute(LEDGER_MOVE)
    op.execute(GAME_WRITE)
    op.execute("DROP FUNCTION ledger_move_fill(text, json, bigint, text, text, bigint)")
    op.drop_constraint(
        "uq_journal_transaction_tenant_id_idempotency_key", "journal_transaction", type_="unique"
    )
    op.drop_column("journal_transaction", "request_hash")
    op.drop_column("journal_transaction", "idempotency_key")


def downgrade() -> None:
    op.add_column("journal_transaction", sa.Column("idempotency_key", sa.String(200), nullable=True))
    op.add_column("journal_transaction", sa.Column("request_hash", sa.String(128), nullable=True))
    op.create_unique_constraint(
        "uq_journal_transaction_tenant_id_idempotency_key",
        "journal_transaction",
        ["tenant_id", "idempotency_key"],
    )
    ledger_move = _previous("0010_ledger_move")
    op.execute(ledger_move.LEDGER_MOVE_FILL)
    op.execute(ledger_move.LEDGER_MOVE.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1))
    op.execute(_previous("0012_head_last").GAME_WRITE)
    row_inserts = _previous("0016_ledger_post_row_inserts")
    op.execute(row_inserts.row_by_row(row_inserts._previous("0014_ledger_chains").LEDGER_POST))


def _previous(revision_file: str) -> ModuleType:
    """An earlier migration, for the text of what it created (a migration file never changes)."""
    path = Path(__file__).with_name(f"{revision_file}.py")
    spec = importlib.util.spec_from_file_location(f"pokna_migration_{revision_file}", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
