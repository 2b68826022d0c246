-- ledger_posting_apply(): trigger trg_posting_apply, AFTER INSERT ON posting. Adds the posting's amount to
-- its account's balance, in one UPDATE that also finds the posting's transaction: refuses a posting whose
-- transaction is not its tenant's, a posting whose created_at is not its transaction's (the account's
-- transactions are read in that order from the posting alone: docs/ledger.md, "Reading an account"), a leg
-- beyond the transaction's declared posting count, and an account that is not the posting's tenant's or not
-- in its currency. The one way a balance changes
-- (ledger_account_guard). Refusals are SQLSTATE 23000. Since 0020 this UPDATE is what ties a posting to its
-- transaction and its account: the posting's foreign keys to journal_transaction, account and tenant are
-- gone (docs/ledger.md, "What the database checks per posting, and how"). Journal transactions are
-- append-only, so the one it found cannot go before COMMIT.
--
-- Last set by migrations/versions/0025_posting_created_at.py (the posting's created_at compared with its
-- transaction's in the same look-up); 0020_posting_checks (the transaction's look-up a subquery of the
-- balance's UPDATE, a missing transaction refused in place of the foreign key; 0011_distribution_keys read
-- the transaction and the account under the posting's tenant; created with its trigger by 0002_ledger). On Citus `pokna db upgrade` also gives it
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
$$;

CREATE TRIGGER trg_posting_apply AFTER INSERT ON posting
    FOR EACH ROW EXECUTE FUNCTION ledger_posting_apply();
