-- ledger_move_fill(template, fill json, seq, prev_hash, hash, balance): pure. The template (an announcement's
-- or an answer's JSON text) with each of the client's placeholders (fill: field -> placeholder) replaced by
-- the posted value: seq and balance as numbers, the hashes as JSON strings. Used by ledger_move().
--
-- Last set by migrations/versions/0010_ledger_move.py, which created it.
--
-- This file is the function as the database holds it at the head migration. To change it, edit this file and
-- write a new migration that applies a frozen copy of the new text (a migration never reads this file:
-- history must not move when the source does). tests/db/test_sql_source.py fails while the database and this
-- file disagree. docs/architecture.md, "The SQL in force".

CREATE OR REPLACE FUNCTION ledger_move_fill(p_template text, p_fill json, p_seq bigint, p_prev_hash text,
    p_hash text, p_balance bigint) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT replace(replace(replace(replace(p_template,
        p_fill->>'seq', p_seq::text),
        p_fill->>'prev_hash', '"' || p_prev_hash || '"'),
        p_fill->>'hash', '"' || p_hash || '"'),
        p_fill->>'balance', p_balance::text)
$$;
