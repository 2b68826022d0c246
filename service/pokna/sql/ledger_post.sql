-- ledger_post(tenant, batch jsonb): the ledger's one posting under the lock, a refusal answered as a status.
-- Locks the head of the batch's chain (creating it on the chain's first posting; tenant_not_found), locks
-- the accounts by ascending id (account_not_found), compares the expected balances (balances_changed),
-- runs every leg in order on its account's balance (insufficient_funds for a wallet or pot below zero,
-- balance_out_of_range beyond 10^18), then hashes each transaction onto the previous one and inserts it and
-- its postings, and advances the head. Answers where the
-- batch went (first_seq, first_prev_hash, each transaction's hash) and the locked accounts' balances after
-- it. Called by game_write() and ledger_move(); docs/ledger.md, "Writing: one way in".
--
-- The batch (pokna.ledger.posting_batch.PostingBatch, version 1; pokna.ledger.posting_batch.batch_document
-- builds it; a batch of another version is refused before anything is read or locked, 22023):
--   version            1;
--   chain              the tenant's hash chain it goes on (absent: 0);
--   accounts           every account to lock: those the postings touch and those expected_balances names
--                      (a game request's first posting names every account of the request);
--   expected_balances  {account id: balance} the caller decided on (absent: none);
--   transactions       in seq order, each {id, kind, reference, metadata (its JSON text, stored as it is),
--                      created_at, before_prev, before_seq, rest (the hashed bytes around prev_hash and seq,
--                      bytea hex: pokna_verify.ledger.chain.hash_parts), postings: in leg order, each
--                      {id, account_id, amount, currency}}.
--
-- Last set by migrations/versions/0025_posting_created_at.py (each posting written with its transaction's
-- created_at); earlier bodies: 0023_posting_batch_version (the batch's version checked here too, not only by
-- the callers), 0004_ledger_post, 0005_ledger_post_json, 0011_distribution_keys,
-- 0014_ledger_chains, 0016_ledger_post_row_inserts, 0017_ledger_post_document (the batch as one document of
-- transactions and their postings, no ledger-level idempotency key, the checks set-based),
-- 0020_posting_checks (a transaction's two postings in one INSERT).
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
$$;
