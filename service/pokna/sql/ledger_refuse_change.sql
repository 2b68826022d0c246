-- ledger_refuse_change(): the append-only triggers. UPDATE and DELETE (row triggers) and TRUNCATE (statement
-- triggers) of journal_transaction, posting and ledger_checkpoint are refused with SQLSTATE 23000: a
-- correction is a new, reversing transaction.
--
-- Last set by migrations/versions/0002_ledger.py, which created it and its six triggers.
--
-- This file is the function as the database holds it at the head migration, with its triggers. To change it,
-- edit this file and write a new migration that applies a frozen copy of the new text (a migration never
-- reads this file: history must not move when the source does). tests/db/test_sql_source.py fails while the
-- database and this file disagree. docs/architecture.md, "The SQL in force".

CREATE OR REPLACE FUNCTION ledger_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'ledger: % is append-only; % refused (post a reversing transaction instead)',
        TG_TABLE_NAME, TG_OP USING ERRCODE = '23000';
END
$$;

CREATE TRIGGER trg_journal_transaction_append_only BEFORE UPDATE OR DELETE ON journal_transaction
    FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER trg_journal_transaction_no_truncate BEFORE TRUNCATE ON journal_transaction
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER trg_posting_append_only BEFORE UPDATE OR DELETE ON posting
    FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER trg_posting_no_truncate BEFORE TRUNCATE ON posting
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER trg_ledger_checkpoint_append_only BEFORE UPDATE OR DELETE ON ledger_checkpoint
    FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER trg_ledger_checkpoint_no_truncate BEFORE TRUNCATE ON ledger_checkpoint
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();
