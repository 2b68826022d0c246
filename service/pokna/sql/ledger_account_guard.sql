-- ledger_account_guard(): triggers trg_account_guard (BEFORE UPDATE ON account), trg_account_keep (BEFORE
-- DELETE) and trg_account_no_truncate (BEFORE TRUNCATE). An account's id, tenant, kind, currency, external
-- id and creation time never change, and its balance changes only by posting: the UPDATE of
-- ledger_posting_apply() runs at trigger depth 1, a client's at depth 0 (the function sees one more). The
-- trigger's WHEN leaves the function out of a posting's own balance update, which it would let through.
-- An account some posting names is never deleted, and the table is never truncated: since 0020 no foreign
-- key from posting keeps them (docs/ledger.md, "What the database checks per posting, and how"). Refusals
-- are SQLSTATE 23000.
--
-- Last set by migrations/versions/0020_posting_checks.py (the WHEN, the delete and truncate triggers;
-- created with trg_account_guard by 0002_ledger).
--
-- This file is the function as the database holds it at the head migration, with its triggers. To change it,
-- edit this file and write a new migration that applies a frozen copy of the new text (a migration never
-- reads this file: history must not move when the source does). tests/db/test_sql_source.py fails while the
-- database and this file disagree. docs/architecture.md, "The SQL in force".

CREATE OR REPLACE FUNCTION ledger_account_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        RAISE EXCEPTION 'ledger: account is never truncated (postings name its rows)' USING ERRCODE = '23000';
    END IF;
    IF TG_OP = 'DELETE' THEN
        IF EXISTS (SELECT 1 FROM posting WHERE tenant_id = OLD.tenant_id AND account_id = OLD.id) THEN
            RAISE EXCEPTION 'ledger: account % has postings and is never deleted', OLD.id
                USING ERRCODE = '23000';
        END IF;
        RETURN OLD;
    END IF;
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

CREATE TRIGGER trg_account_guard BEFORE UPDATE ON account FOR EACH ROW
    WHEN (pg_trigger_depth() < 1 OR (OLD.id, OLD.tenant_id, OLD.kind, OLD.currency, OLD.external_id,
        OLD.created_at) IS DISTINCT FROM (NEW.id, NEW.tenant_id, NEW.kind, NEW.currency, NEW.external_id,
        NEW.created_at))
    EXECUTE FUNCTION ledger_account_guard();
CREATE TRIGGER trg_account_keep BEFORE DELETE ON account
    FOR EACH ROW EXECUTE FUNCTION ledger_account_guard();
CREATE TRIGGER trg_account_no_truncate BEFORE TRUNCATE ON account
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_account_guard();
