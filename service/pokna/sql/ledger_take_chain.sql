-- ledger_take_chain(tenant, preferred): one of the tenant's hash chains, its head locked until COMMIT, for a
-- writer that may post on any chain (a deposit or a withdrawal: pokna.ledger.moving). The first free one
-- from `preferred` on (preferred, preferred + 1, ... modulo 16), taken FOR UPDATE SKIP LOCKED, so one
-- tenant's concurrent writers spread over its chains instead of queueing behind each other's COMMIT (and
-- its WAL flush) on the chain their keys hash to. A tenant without its 16 heads yet gets them here, one row
-- each, as ledger_post() creates a head. When every chain is taken it waits for `preferred`'s head: a
-- writer never fails for want of a chain. The caller then posts on the chain it got, whose head it holds:
-- ledger_post() locks it again (at once: it is this transaction's) and the accounts after it, the ledger's
-- one lock order. An unknown tenant gets `preferred` with nothing locked, and ledger_post()'s
-- tenant_not_found. docs/ledger.md, "Chains".
--
-- Created by migrations/versions/0019_ledger_take_chain.py.
--
-- This file is the function as the database holds it at the head migration. To change it, edit this file and
-- write a new migration that applies a frozen copy of the new text (a migration never reads this file:
-- history must not move when the source does). tests/db/test_sql_source.py fails while the database and this
-- file disagree. docs/architecture.md, "The SQL in force".

CREATE OR REPLACE FUNCTION ledger_take_chain(p_tenant_id text, p_preferred smallint) RETURNS smallint
LANGUAGE plpgsql AS $$
DECLARE
    v_chain smallint;
BEGIN
    -- LEDGER_CHAINS = 16 (pokna_verify.ledger.chain; the CHECK on ledger_head.chain).
    SELECT chain INTO v_chain FROM ledger_head WHERE tenant_id = p_tenant_id
        ORDER BY (chain + 16 - p_preferred) % 16 LIMIT 1 FOR UPDATE SKIP LOCKED;
    IF FOUND THEN
        RETURN v_chain;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM tenant WHERE id = p_tenant_id) THEN
        RETURN p_preferred;
    END IF;
    -- Every head there is, is taken (or there is none yet): the missing ones are made. Then a second look in a
    -- snapshot of its own, whether or not this writer made any: another writer may have committed the
    -- tenant's heads between the first look and the count.
    IF (SELECT count(*) FROM ledger_head WHERE tenant_id = p_tenant_id) < 16 THEN
        FOR v_missing IN 0 .. 15 LOOP
            INSERT INTO ledger_head (tenant_id, chain, last_seq, last_hash)
                VALUES (p_tenant_id, v_missing, 0, '0000000000000000000000000000000000000000000000000000000000000000')
                ON CONFLICT (tenant_id, chain) DO NOTHING;
        END LOOP;
    END IF;
    SELECT chain INTO v_chain FROM ledger_head WHERE tenant_id = p_tenant_id
        ORDER BY (chain + 16 - p_preferred) % 16 LIMIT 1 FOR UPDATE SKIP LOCKED;
    IF FOUND THEN
        RETURN v_chain;
    END IF;
    PERFORM 1 FROM ledger_head WHERE tenant_id = p_tenant_id AND chain = p_preferred FOR UPDATE;
    RETURN p_preferred;
END
$$;
