"""ledger_post(tenant, batch jsonb): the posting batch as one JSON document instead of 22 array parameters.

Same locks in the same order, same checks, statuses, hashing, inserts and head advance as 0004_ledger_post;
only the way the batch arrives changes. The client encodes one JSON text (json.dumps, in C) where it
encoded 22 arrays in Python (psycopg's list dumper was ~7% of a game action's CPU), and the server reads
it with one jsonb_to_record into typed arrays. Measured per batch of 2 transactions and 4 postings: jsonb
with columns of arrays ~45 us, json the same way ~55 us (~70 us with the hashed bytes as bytea hex), json
or jsonb as rows (json_to_recordset per table) 50-130 us. The hashed bytes travel as bytea hex, so the
hash never depends on the database's encoding; each transaction's metadata travels as its JSON text and is
stored as that text, as before (through jsonb it would come out reordered and respaced).

Idempotency keys are the transactions' own, not a separate list that could disagree with them.

The new function is an overload beside 0004's, which stays for processes still running the previous code
during a rolling deployment; the downgrade drops only the new one.

Revision ID: 0005_ledger_post_json
Revises: 0004_ledger_post
Create Date: 2026-11-30
"""

from __future__ import annotations

from alembic import op

revision = "0005_ledger_post_json"
down_revision = "0004_ledger_post"
branch_labels = None
depends_on = None

# Statuses and OUT values as in 0004. The batch is one JSON object of arrays: "accounts" (every account
# involved, sorted), "expected_ids" and "expected_balances"; per transaction "t_id", "t_kind", "t_reference",
# "t_metadata" (JSON text), "t_idempotency_key", "t_request_hash", "t_posting_count", "t_created_at" and the
# hashed bytes "t_before_prev", "t_before_seq", "t_rest" (bytea hex, "\\x..."); per posting, flattened in
# transaction then leg order, "p_id", "p_transaction" (1-based index of its transaction), "p_leg",
# "p_account_id", "p_amount", "p_currency".
LEDGER_POST = """
CREATE FUNCTION ledger_post(
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
) LANGUAGE plpgsql AS $$
DECLARE
    p_account_ids text[];
    p_expected_ids text[];
    p_expected_balances bigint[];
    t_id text[];
    t_kind text[];
    t_reference text[];
    t_metadata text[];
    t_idempotency_key text[];
    t_request_hash text[];
    t_posting_count smallint[];
    t_created_at timestamptz[];
    t_before_prev bytea[];
    t_before_seq bytea[];
    t_rest bytea[];
    p_id text[];
    p_transaction int[];
    p_leg int[];
    p_account_id text[];
    p_amount bigint[];
    p_currency text[];
    v_keys text[];
    v_seq bigint;
    v_hash text;
    v_tenants text[];
    v_kinds text[];
    v_i int;
    v_at int;
    v_new bigint;
BEGIN
    SELECT * INTO p_account_ids, p_expected_ids, p_expected_balances, t_id, t_kind, t_reference, t_metadata,
            t_idempotency_key, t_request_hash, t_posting_count, t_created_at, t_before_prev, t_before_seq,
            t_rest, p_id, p_transaction, p_leg, p_account_id, p_amount, p_currency
        FROM jsonb_to_record(p_batch) AS batch(accounts text[], expected_ids text[], expected_balances bigint[],
            t_id text[], t_kind text[], t_reference text[], t_metadata text[], t_idempotency_key text[],
            t_request_hash text[], t_posting_count smallint[], t_created_at timestamptz[],
            t_before_prev bytea[], t_before_seq bytea[], t_rest bytea[], p_id text[], p_transaction int[],
            p_leg int[], p_account_id text[], p_amount bigint[], p_currency text[]);

    SELECT last_seq, last_hash INTO v_seq, v_hash FROM ledger_head WHERE tenant_id = p_tenant_id FOR UPDATE;
    IF NOT FOUND THEN
        IF NOT EXISTS (SELECT 1 FROM tenant WHERE id = p_tenant_id) THEN
            status := 'tenant_not_found';
            RETURN;
        END IF;
        INSERT INTO ledger_head (tenant_id, last_seq, last_hash)
            VALUES (p_tenant_id, 0, '0000000000000000000000000000000000000000000000000000000000000000')
            ON CONFLICT (tenant_id) DO NOTHING;
        SELECT last_seq, last_hash INTO v_seq, v_hash FROM ledger_head WHERE tenant_id = p_tenant_id FOR UPDATE;
    END IF;

    -- A fresh snapshot, taken after the head lock: a key committed by the previous holder is seen.
    v_keys := array_remove(t_idempotency_key, NULL);
    IF cardinality(v_keys) > 0 AND EXISTS (
        SELECT 1 FROM journal_transaction
        WHERE tenant_id = p_tenant_id AND idempotency_key = ANY(v_keys)
    ) THEN
        status := 'replay';
        RETURN;
    END IF;

    -- The ledger's one lock order: head, then accounts by ascending id. NO KEY: see repository.lock_accounts.
    SELECT array_agg(id), array_agg(tenant_id), array_agg(kind), array_agg(balance)
        INTO held_account_ids, v_tenants, v_kinds, held_balances
        FROM (
            SELECT id, tenant_id, kind, balance FROM account
            WHERE id = ANY(p_account_ids) ORDER BY id FOR NO KEY UPDATE
        ) AS locked;
    FOR v_i IN 1 .. cardinality(p_account_ids) LOOP
        v_at := array_position(held_account_ids, p_account_ids[v_i]);
        IF v_at IS NULL OR v_tenants[v_at] <> p_tenant_id THEN
            status := 'account_not_found';
            refused_account_id := p_account_ids[v_i];
            RETURN;
        END IF;
    END LOOP;

    FOR v_i IN 1 .. coalesce(cardinality(p_expected_ids), 0) LOOP
        IF held_balances[array_position(held_account_ids, p_expected_ids[v_i])]
            <> p_expected_balances[v_i] THEN
            status := 'balances_changed';
            RETURN;
        END IF;
    END LOOP;

    FOR v_i IN 1 .. cardinality(p_id) LOOP
        v_at := array_position(held_account_ids, p_account_id[v_i]);
        v_new := held_balances[v_at] + p_amount[v_i];
        IF abs(v_new) > 1000000000000000000 THEN  -- MAX_ABS_BALANCE, 10^18
            status := 'balance_out_of_range';
            refused_account_id := p_account_id[v_i];
            refused_balance := v_new;
            RETURN;
        END IF;
        IF v_new < 0 AND v_kinds[v_at] IN ('player_wallet', 'game_pot') THEN
            status := 'insufficient_funds';
            refused_account_id := p_account_id[v_i];
            refused_balance := held_balances[v_at];
            refused_change := p_amount[v_i];
            RETURN;
        END IF;
        held_balances[v_at] := v_new;
    END LOOP;

    first_seq := v_seq + 1;
    first_prev_hash := v_hash;
    hashes := '{}';
    FOR v_i IN 1 .. cardinality(t_id) LOOP
        v_seq := v_seq + 1;
        v_hash := encode(sha256(t_before_prev[v_i] || convert_to(v_hash, 'UTF8') || t_before_seq[v_i]
            || convert_to(v_seq::text, 'UTF8') || t_rest[v_i]), 'hex');
        hashes := hashes || v_hash;
    END LOOP;

    -- In seq order: the chain-link trigger looks for each row's predecessor.
    INSERT INTO journal_transaction (id, tenant_id, seq, kind, reference, metadata, idempotency_key,
        request_hash, posting_count, prev_hash, hash, created_at)
    SELECT t.id, p_tenant_id, first_seq + t.n - 1, t.kind, t.reference, t.metadata::json, t.idempotency_key,
        t.request_hash,
        t.posting_count,
        CASE WHEN t.n = 1 THEN first_prev_hash ELSE hashes[t.n - 1] END, hashes[t.n], t.created_at
    FROM unnest(t_id, t_kind, t_reference, t_metadata, t_idempotency_key, t_request_hash, t_posting_count,
            t_created_at)
        WITH ORDINALITY AS t(id, kind, reference, metadata, idempotency_key, request_hash, posting_count,
            created_at, n)
    ORDER BY t.n;
    INSERT INTO posting (id, transaction_id, leg, account_id, amount, currency)
    SELECT p.id, t_id[p.owner], p.leg, p.account_id, p.amount, p.currency
    FROM unnest(p_id, p_transaction, p_leg, p_account_id, p_amount, p_currency)
        AS p(id, owner, leg, account_id, amount, currency);
    UPDATE ledger_head SET last_seq = v_seq, last_hash = v_hash WHERE tenant_id = p_tenant_id;
    status := 'posted';
END
$$
"""


# 0004's function stays beside this one: the API is stateless and rolls out process by process, and
# `pokna serve` migrates on start, so processes still running the previous code keep posting through it
# until they are replaced. A later migration drops it, once no deployment runs code older than this.
_THIS_FUNCTION = "ledger_post(text, jsonb)"


def upgrade() -> None:
    op.execute(f"DROP FUNCTION IF EXISTS {_THIS_FUNCTION}")
    op.execute(LEDGER_POST)


def downgrade() -> None:
    op.execute(f"DROP FUNCTION IF EXISTS {_THIS_FUNCTION}")
