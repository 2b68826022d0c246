"""ledger_post(): the PostgreSQL posting path, in one round trip under the tenant's head lock.

A tenant's hash chain serializes its writers on the `ledger_head` row, so posting throughput is one over the
time that lock is held. The service validates, generates ids and timestamps and encodes each transaction's
RFC 8785 bytes *before* locking (pokna.ledger.chain.hash_parts), and this function does only what needs the
lock: lock the head, look up idempotency keys, lock the accounts in id order, check balances, hash, insert
and advance the head. A function rather than one data-modifying statement because in READ COMMITTED a
statement's snapshot predates its wait for the head lock, so an idempotency key committed by the lock holder
would be missed; each statement of a PL/pgSQL function takes a fresh snapshot.

It refuses by returning a status and writing nothing (the service raises the typed error). Every trigger and
constraint of 0002_ledger still fires on what it writes.

Revision ID: 0004_ledger_post
Revises: 0003_games
Create Date: 2026-11-30
"""

from __future__ import annotations

from alembic import op

revision = "0004_ledger_post"
down_revision = "0003_games"
branch_labels = None
depends_on = None

# Statuses: posted, tenant_not_found, replay, account_not_found (refused_account_id), balances_changed
# (held_*), balance_out_of_range and insufficient_funds (refused_account_id, refused_balance, refused_change).
# Postings come flattened in transaction then leg order; p_transaction is each one's 1-based index
# into the transaction arrays.
LEDGER_POST = """
CREATE FUNCTION ledger_post(
    p_tenant_id text,
    p_account_ids text[],
    p_expected_ids text[],
    p_expected_balances bigint[],
    p_idempotency_keys text[],
    t_id text[],
    t_kind text[],
    t_reference text[],
    t_metadata text[],
    t_idempotency_key text[],
    t_request_hash text[],
    t_posting_count smallint[],
    t_created_at timestamptz[],
    t_before_prev bytea[],
    t_before_seq bytea[],
    t_rest bytea[],
    p_id text[],
    p_transaction int[],
    p_leg int[],
    p_account_id text[],
    p_amount bigint[],
    p_currency text[],
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
    v_seq bigint;
    v_hash text;
    v_tenants text[];
    v_kinds text[];
    v_i int;
    v_at int;
    v_new bigint;
BEGIN
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
    IF cardinality(p_idempotency_keys) > 0 AND EXISTS (
        SELECT 1 FROM journal_transaction
        WHERE tenant_id = p_tenant_id AND idempotency_key = ANY(p_idempotency_keys)
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


def upgrade() -> None:
    op.execute(LEDGER_POST)


def downgrade() -> None:
    op.execute("DROP FUNCTION IF EXISTS ledger_post")
