-- ledger_post(tenant, batch jsonb): the ledger's one posting under the lock, a refusal answered as a status.
-- Locks the head of the batch's chain (creating it on the chain's first posting; tenant_not_found), answers
-- replay if one of the batch's idempotency keys is posted, locks the accounts by ascending id
-- (account_not_found), compares the expected balances (balances_changed), applies the postings to running
-- balances (insufficient_funds for a wallet or pot below zero, balance_out_of_range beyond 10^18), hashes
-- each transaction onto the previous one, inserts the transactions and their postings one row at a time, and
-- advances the head. Called by pokna.ledger.store_postgresql, game_write() and ledger_move(); docs/ledger.md,
-- "Writing: one way in".
--
-- Last set by migrations/versions/0016_ledger_post_row_inserts.py (0014_ledger_chains' function with its two
-- multi-row inserts made loops of single-row inserts; earlier bodies: 0004_ledger_post,
-- 0005_ledger_post_json, 0011_distribution_keys).
--
-- This file is the function as the database holds it at the head migration. To change it, edit this file and
-- write a new migration that applies a frozen copy of the new text (a migration never reads this file:
-- history must not move when the source does). tests/db/test_sql_source.py fails while the database and this
-- file disagree. docs/architecture.md, "The SQL in force".

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
    v_chain smallint;
    v_seq bigint;
    v_hash text;
    v_tenants text[];
    v_kinds text[];
    v_i int;
    v_at int;
    v_new bigint;
    v_inserted int;
BEGIN
    SELECT * INTO v_chain, p_account_ids, p_expected_ids, p_expected_balances, t_id, t_kind, t_reference, t_metadata,
            t_idempotency_key, t_request_hash, t_posting_count, t_created_at, t_before_prev, t_before_seq,
            t_rest, p_id, p_transaction, p_leg, p_account_id, p_amount, p_currency
        FROM jsonb_to_record(p_batch) AS batch(chain smallint, accounts text[], expected_ids text[], expected_balances bigint[],
            t_id text[], t_kind text[], t_reference text[], t_metadata text[], t_idempotency_key text[],
            t_request_hash text[], t_posting_count smallint[], t_created_at timestamptz[],
            t_before_prev bytea[], t_before_seq bytea[], t_rest bytea[], p_id text[], p_transaction int[],
            p_leg int[], p_account_id text[], p_amount bigint[], p_currency text[]);

    v_chain := coalesce(v_chain, 0);
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

    -- A fresh snapshot, taken after the head lock: a key committed by the previous holder is seen.
    v_keys := array_remove(t_idempotency_key, NULL);
    IF cardinality(v_keys) > 0 AND EXISTS (
        SELECT 1 FROM journal_transaction
        WHERE tenant_id = p_tenant_id AND idempotency_key = ANY(v_keys)
    ) THEN
        status := 'replay';
        RETURN;
    END IF;

    -- The ledger's one lock order: a head, then accounts by ascending id (one chain per unit of work). NO KEY: see repository.lock_accounts.
    SELECT array_agg(id), array_agg(tenant_id), array_agg(kind), array_agg(balance)
        INTO held_account_ids, v_tenants, v_kinds, held_balances
        FROM (
            SELECT id, tenant_id, kind, balance FROM account
            WHERE tenant_id = p_tenant_id AND id = ANY(p_account_ids) ORDER BY id FOR NO KEY UPDATE
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
    -- Row by row, in seq order (the chain-link trigger looks for each row's predecessor): on Citus a
    -- single-row insert naming the tenant goes to its shard, where INSERT ... SELECT gathers and copies.
    v_inserted := 0;
    FOR v_i IN 1 .. cardinality(t_id) LOOP
        INSERT INTO journal_transaction (id, tenant_id, chain, seq, kind, reference, metadata, idempotency_key,
            request_hash, posting_count, prev_hash, hash, created_at)
        VALUES (t_id[v_i], p_tenant_id, v_chain, first_seq + v_i - 1, t_kind[v_i], t_reference[v_i],
            t_metadata[v_i]::json, t_idempotency_key[v_i], t_request_hash[v_i], t_posting_count[v_i],
            CASE WHEN v_i = 1 THEN first_prev_hash ELSE hashes[v_i - 1] END, hashes[v_i], t_created_at[v_i])
        -- A key is unique per tenant, and the check above ran under this chain's head only: a posting under
        -- the same key on another chain may have committed since (this insert waited for it): a replay.
        ON CONFLICT ON CONSTRAINT uq_journal_transaction_tenant_id_idempotency_key DO NOTHING;
        GET DIAGNOSTICS v_at = ROW_COUNT;
        v_inserted := v_inserted + v_at;
    END LOOP;
    IF v_inserted = 0 THEN
        status := 'replay';
        RETURN;
    ELSIF v_inserted < cardinality(t_id) THEN
        RAISE EXCEPTION USING ERRCODE = '23505',
            MESSAGE = 'ledger_post: some of the batch''s idempotency keys were posted on another chain meanwhile';
    END IF;
    FOR v_i IN 1 .. cardinality(p_id) LOOP
        INSERT INTO posting (id, tenant_id, transaction_id, leg, account_id, amount, currency)
        VALUES (p_id[v_i], p_tenant_id, t_id[p_transaction[v_i]], p_leg[v_i], p_account_id[v_i], p_amount[v_i],
            p_currency[v_i]);
    END LOOP;
    UPDATE ledger_head SET last_seq = v_seq, last_hash = v_hash WHERE tenant_id = p_tenant_id AND chain = v_chain;
    status := 'posted';
END
$$;
