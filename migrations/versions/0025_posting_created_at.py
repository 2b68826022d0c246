"""Each posting carries its transaction's moment, so an account's transactions are read a page at a time.

`GET /v1/accounts/{id}/transactions` lists an account's postings newest first by their transaction's
(created_at, id). The posting had no time of its own: every page read all of the account's postings
(`ix_posting_account_id`), looked up each one's transaction, sorted them and kept `limit`, a page costing
the account's whole history (a tenant's funding and revenue accounts take a posting per deposit or game).

- `posting.created_at` (timestamptz, NOT NULL): its transaction's created_at, copied. The journal
  transaction stays the source of truth; `ledger_posting_apply()` refuses a posting whose created_at is
  not its transaction's (23000), in the look-up of the transaction it already made (no extra statement),
  and `ledger_post()` writes it.
- Existing postings are backfilled from their transactions by one UPDATE joined on (tenant_id, id), which
  Citus runs shard by shard (the two tables are colocated). Postings are append-only: the migration drops
  `trg_posting_append_only` for that UPDATE and creates it again, as it was, in the same transaction. The
  ADD COLUMN before it holds the table's ACCESS EXCLUSIVE lock until COMMIT, so no other session writes or
  changes a posting while the trigger is gone, and a failure rolls the drop back with the rest. Dropping
  and creating a trigger is DDL Citus passes on to the shards, as 0020 did for `trg_account_guard`
  (tests/citus/test_citus_posting_created_at.py upgrades a distributed database holding postings).
- `ix_posting_account_id (account_id)` is replaced by `ix_posting_account_time (tenant_id, account_id,
  created_at, transaction_id)`, built after the backfill: a page is that index read backwards from the
  top (or from the cursor's key), `limit` entries. Its (tenant_id, account_id) prefix serves
  `ledger_account_guard()`'s "does a posting name this account", the old index's other reader.

What it costs an operator with a large posting table: docs/operations.md, "Migration 0025 on a large
posting table".

The downgrade restores 0023's `ledger_post()`, 0020's `ledger_posting_apply()` and the old index, and drops
the column.

Revision ID: 0025_posting_created_at
Revises: 0024_game_write_checks
Create Date: 2026-12-06
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import sqlalchemy as sa
from alembic import op

revision = "0025_posting_created_at"
down_revision = "0024_game_write_checks"
branch_labels = None
depends_on = None

APPEND_ONLY = (
    "CREATE TRIGGER trg_posting_append_only BEFORE UPDATE OR DELETE ON posting "
    "FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change()"
)
BACKFILL = (
    "UPDATE posting SET created_at = txn.created_at FROM journal_transaction AS txn "
    "WHERE txn.tenant_id = posting.tenant_id AND txn.id = posting.transaction_id"
)
PAGE_INDEX = "ix_posting_account_time"
PAGE_COLUMNS = ["tenant_id", "account_id", "created_at", "transaction_id"]

LEDGER_POSTING_APPLY = """
CREATE OR REPLACE FUNCTION ledger_posting_apply() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    txn_posting_count int;
    txn_created_at timestamptz;
BEGIN
    -- One statement in the common case: the balance moves only if the posting's transaction is its tenant's,
    -- of the posting's moment, and the leg is within its declared count, and the account is the tenant's in
    -- the posting's currency.
    UPDATE account SET balance = balance + NEW.amount
        WHERE account.tenant_id = NEW.tenant_id AND account.id = NEW.account_id
            AND account.currency = NEW.currency
            AND NEW.leg < (
                SELECT txn.posting_count FROM journal_transaction AS txn
                WHERE txn.tenant_id = NEW.tenant_id AND txn.id = NEW.transaction_id
                    AND txn.created_at = NEW.created_at
            );
    IF FOUND THEN
        RETURN NULL;
    END IF;
    -- Refused: which of the four it was.
    SELECT posting_count, created_at INTO txn_posting_count, txn_created_at
        FROM journal_transaction WHERE tenant_id = NEW.tenant_id AND id = NEW.transaction_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'ledger: posting % names no transaction % of its tenant',
            NEW.id, NEW.transaction_id USING ERRCODE = '23000';
    END IF;
    IF NEW.created_at IS DISTINCT FROM txn_created_at THEN
        RAISE EXCEPTION 'ledger: posting % is created at %, its transaction % at %',
            NEW.id, NEW.created_at, NEW.transaction_id, txn_created_at USING ERRCODE = '23000';
    END IF;
    IF NEW.leg >= txn_posting_count THEN
        RAISE EXCEPTION 'ledger: transaction % declares % postings; leg % refused',
            NEW.transaction_id, txn_posting_count, NEW.leg USING ERRCODE = '23000';
    END IF;
    RAISE EXCEPTION 'ledger: posting % names account % of another tenant or currency',
        NEW.id, NEW.account_id USING ERRCODE = '23000';
END
$$
"""

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
    IF (p_batch->>'version') IS DISTINCT FROM '1' THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format(
            'ledger_post: a posting batch of version %s; this function reads version 1',
            coalesce(p_batch->>'version', 'none'));
    END IF;
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
    -- applied to its balance by its trigger, in the order the running balances were checked in). INSERT ...
    -- VALUES: on Citus it is routed to the tenant's shard, where an INSERT ... SELECT from the document goes
    -- through Citus's pull-and-COPY path and costs more than the rows it saves (0016_ledger_post_row_inserts,
    -- 0017_ledger_post_document; bench/README.md, "Citus").
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
        -- Two legs (a deposit's, a withdrawal's, most of a game's transfers): one INSERT of both rows.
        IF jsonb_array_length(v_transaction.postings) = 2 THEN
            INSERT INTO posting (id, tenant_id, transaction_id, leg, account_id, amount, currency, created_at)
            VALUES (v_transaction.postings->0->>'id', p_tenant_id, v_transaction.id, 0,
                    v_transaction.postings->0->>'account_id', (v_transaction.postings->0->>'amount')::bigint,
                    v_transaction.postings->0->>'currency', v_transaction.created_at),
                (v_transaction.postings->1->>'id', p_tenant_id, v_transaction.id, 1,
                    v_transaction.postings->1->>'account_id', (v_transaction.postings->1->>'amount')::bigint,
                    v_transaction.postings->1->>'currency', v_transaction.created_at);
            CONTINUE;
        END IF;
        FOR v_posting IN
            SELECT * FROM ROWS FROM (jsonb_to_recordset(v_transaction.postings)
                    AS (id text, account_id text, amount bigint, currency text))
                WITH ORDINALITY AS p(id, account_id, amount, currency, n)
        LOOP
            INSERT INTO posting (id, tenant_id, transaction_id, leg, account_id, amount, currency, created_at)
            VALUES (v_posting.id, p_tenant_id, v_transaction.id, v_posting.n - 1, v_posting.account_id,
                v_posting.amount, v_posting.currency, v_transaction.created_at);
        END LOOP;
    END LOOP;

    UPDATE ledger_head SET last_seq = v_seq, last_hash = v_hash WHERE tenant_id = p_tenant_id AND chain = v_chain;
    status := 'posted';
END
$$
"""


def upgrade() -> None:
    # The column's ACCESS EXCLUSIVE lock is held to COMMIT. Waiting for it behind a long reader (an export, an
    # audit bundle) would queue every later statement on posting behind the wait: give up after 10 s instead,
    # to be run again (docs/operations.md). Then back to the session's own setting for the rest.
    op.execute("SET LOCAL lock_timeout = '10s'")
    op.add_column("posting", sa.Column("created_at", sa.DateTime(timezone=True), nullable=True))
    op.execute("SET LOCAL lock_timeout TO DEFAULT")
    op.drop_index("ix_posting_account_id", table_name="posting")
    op.execute("DROP TRIGGER trg_posting_append_only ON posting")
    op.execute(BACKFILL)
    op.execute(APPEND_ONLY)
    op.alter_column("posting", "created_at", nullable=False)
    op.create_index(PAGE_INDEX, "posting", PAGE_COLUMNS)
    op.execute(LEDGER_POSTING_APPLY)
    op.execute(LEDGER_POST)


def downgrade() -> None:
    op.execute(_previous("0023_posting_batch_version").LEDGER_POST)
    op.execute(_previous("0020_posting_checks").LEDGER_POSTING_APPLY)
    op.create_index("ix_posting_account_id", "posting", ["account_id"])
    op.drop_index(PAGE_INDEX, table_name="posting")
    op.drop_column("posting", "created_at")


def _previous(revision_file: str) -> ModuleType:
    """An earlier migration, for the text of what it created (a migration file never changes)."""
    path = Path(__file__).with_name(f"{revision_file}.py")
    spec = importlib.util.spec_from_file_location(f"pokna_migration_{revision_file}", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
