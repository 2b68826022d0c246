-- ledger_check_balanced(): constraint trigger trg_journal_transaction_balanced, AFTER INSERT ON
-- journal_transaction, DEFERRABLE INITIALLY DEFERRED, so checked at COMMIT: the transaction has the number of
-- postings it declares, and they sum to zero in each currency. Refusals are SQLSTATE 23000.
--
-- Last set by migrations/versions/0020_posting_checks.py (the count and the sums in one read of the
-- postings, where there were two; 0011_distribution_keys read the postings under their tenant; created with
-- its trigger by 0002_ledger).
--
-- This file is the function as the database holds it at the head migration, with its triggers. To change it,
-- edit this file and write a new migration that applies a frozen copy of the new text (a migration never
-- reads this file: history must not move when the source does). tests/db/test_sql_source.py fails while the
-- database and this file disagree. docs/architecture.md, "The SQL in force".

CREATE OR REPLACE FUNCTION ledger_check_balanced() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    found_postings int;
    unbalanced_currency text;
BEGIN
    SELECT coalesce(sum(by_currency.postings), 0), min(by_currency.currency) FILTER (WHERE by_currency.total <> 0)
        INTO found_postings, unbalanced_currency
        FROM (
            SELECT currency, count(*) AS postings, sum(amount) AS total FROM posting
            WHERE tenant_id = NEW.tenant_id AND transaction_id = NEW.id GROUP BY currency
        ) AS by_currency;
    IF found_postings <> NEW.posting_count THEN
        RAISE EXCEPTION 'ledger: transaction % (seq %) has % postings but declares %',
            NEW.id, NEW.seq, found_postings, NEW.posting_count USING ERRCODE = '23000';
    END IF;
    IF unbalanced_currency IS NOT NULL THEN
        RAISE EXCEPTION 'ledger: transaction % (seq %) does not balance in %',
            NEW.id, NEW.seq, unbalanced_currency USING ERRCODE = '23000';
    END IF;
    RETURN NULL;
END
$$;

CREATE CONSTRAINT TRIGGER trg_journal_transaction_balanced AFTER INSERT ON journal_transaction
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION ledger_check_balanced();
