-- ledger_posting_apply(): trigger trg_posting_apply, AFTER INSERT ON posting. Refuses a leg beyond its
-- transaction's declared posting count, and adds the posting's amount to its account's balance, refusing an
-- account of another tenant or currency. The one way a balance changes (ledger_account_guard). Refusals are
-- SQLSTATE 23000.
--
-- Last set by migrations/versions/0011_distribution_keys.py (the transaction and the account read under the
-- posting's tenant; created with its trigger by 0002_ledger). On Citus `pokna db upgrade` also gives it
-- `plan_cache_mode = force_custom_plan` (pokna.db.distribution.WORKER_FUNCTION_SETTINGS; docs/scaling.md,
-- "Plans on the workers").
--
-- This file is the function as the database holds it at the head migration, with its triggers. To change it,
-- edit this file and write a new migration that applies a frozen copy of the new text (a migration never
-- reads this file: history must not move when the source does). tests/db/test_sql_source.py fails while the
-- database and this file disagree. docs/architecture.md, "The SQL in force".

CREATE OR REPLACE FUNCTION ledger_posting_apply() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    txn_posting_count int;
BEGIN
    SELECT posting_count INTO txn_posting_count
        FROM journal_transaction WHERE tenant_id = NEW.tenant_id AND id = NEW.transaction_id;
    IF NEW.leg >= txn_posting_count THEN
        RAISE EXCEPTION 'ledger: transaction % declares % postings; leg % refused',
            NEW.transaction_id, txn_posting_count, NEW.leg USING ERRCODE = '23000';
    END IF;
    UPDATE account SET balance = balance + NEW.amount
        WHERE tenant_id = NEW.tenant_id AND id = NEW.account_id AND currency = NEW.currency;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'ledger: posting % names account % of another tenant or currency',
            NEW.id, NEW.account_id USING ERRCODE = '23000';
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER trg_posting_apply AFTER INSERT ON posting
    FOR EACH ROW EXECUTE FUNCTION ledger_posting_apply();
