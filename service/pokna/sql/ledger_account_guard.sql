-- ledger_account_guard(): trigger trg_account_guard, BEFORE UPDATE ON account. An account's id, tenant, kind,
-- currency, external id and creation time never change, and its balance changes only by posting: the UPDATE
-- of ledger_posting_apply() runs at trigger depth 2, a client's at depth 1. Refusals are SQLSTATE 23000.
--
-- Last set by migrations/versions/0002_ledger.py, which created it and its trigger.
--
-- This file is the function as the database holds it at the head migration, with its triggers. To change it,
-- edit this file and write a new migration that applies a frozen copy of the new text (a migration never
-- reads this file: history must not move when the source does). tests/db/test_sql_source.py fails while the
-- database and this file disagree. docs/architecture.md, "The SQL in force".

CREATE OR REPLACE FUNCTION ledger_account_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.id IS DISTINCT FROM OLD.id OR NEW.tenant_id IS DISTINCT FROM OLD.tenant_id
        OR NEW.kind IS DISTINCT FROM OLD.kind OR NEW.currency IS DISTINCT FROM OLD.currency
        OR NEW.external_id IS DISTINCT FROM OLD.external_id OR NEW.created_at IS DISTINCT FROM OLD.created_at
    THEN
        RAISE EXCEPTION 'ledger: account % is immutable except for its balance', OLD.id
            USING ERRCODE = '23000';
    END IF;
    -- Depth 1 is a statement from a client; the posting trigger's own UPDATE runs at depth 2.
    IF NEW.balance IS DISTINCT FROM OLD.balance AND pg_trigger_depth() < 2 THEN
        RAISE EXCEPTION 'ledger: the balance of account % changes only by posting', OLD.id
            USING ERRCODE = '23000';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER trg_account_guard BEFORE UPDATE ON account
    FOR EACH ROW EXECUTE FUNCTION ledger_account_guard();
