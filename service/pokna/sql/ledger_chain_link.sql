-- ledger_chain_link(): trigger trg_journal_transaction_chain_link, BEFORE INSERT ON journal_transaction. Seq
-- 1 of a tenant's chain follows the genesis hash (64 zeros); seq n names seq n-1's hash on the same chain as
-- its prev_hash. Refusals are SQLSTATE 23000.
--
-- Last set by migrations/versions/0014_ledger_chains.py (the predecessor looked for on the row's own chain;
-- created with its trigger by 0002_ledger).
--
-- This file is the function as the database holds it at the head migration, with its triggers. To change it,
-- edit this file and write a new migration that applies a frozen copy of the new text (a migration never
-- reads this file: history must not move when the source does). tests/db/test_sql_source.py fails while the
-- database and this file disagree. docs/architecture.md, "The SQL in force".

CREATE OR REPLACE FUNCTION ledger_chain_link() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.seq = 1 THEN
        IF NEW.prev_hash <> '0000000000000000000000000000000000000000000000000000000000000000' THEN
            RAISE EXCEPTION 'ledger: seq 1 of chain % of tenant % must follow the genesis hash',
                NEW.chain, NEW.tenant_id USING ERRCODE = '23000';
        END IF;
    ELSIF NOT EXISTS (
        SELECT 1 FROM journal_transaction
        WHERE tenant_id = NEW.tenant_id AND chain = NEW.chain AND seq = NEW.seq - 1 AND hash = NEW.prev_hash
    ) THEN
        RAISE EXCEPTION 'ledger: seq % of chain % of tenant % does not extend the chain (no seq % with hash %)',
            NEW.seq, NEW.chain, NEW.tenant_id, NEW.seq - 1, NEW.prev_hash USING ERRCODE = '23000';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER trg_journal_transaction_chain_link BEFORE INSERT ON journal_transaction
    FOR EACH ROW EXECUTE FUNCTION ledger_chain_link();
