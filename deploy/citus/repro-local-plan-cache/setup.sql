-- A table distributed by `k` over 8 shards, and a PL/pgSQL function whose three statements name it with the
-- distribution key as a parameter (so Citus prunes their shard at run time). Run on the coordinator.
DROP FUNCTION IF EXISTS repro_touch(int, int);
DROP TABLE IF EXISTS repro_items;
SET citus.shard_count = 8;
CREATE TABLE repro_items (k int NOT NULL, n int NOT NULL, note text NOT NULL, PRIMARY KEY (k, n));
SELECT create_distributed_table('repro_items', 'k');
CREATE FUNCTION repro_touch(p_k int, p_n int) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    v_note text;
BEGIN
    INSERT INTO repro_items (k, n, note) VALUES (p_k, p_n, 'inserted');
    UPDATE repro_items SET note = 'updated' WHERE k = p_k AND n = p_n;
    SELECT note INTO v_note FROM repro_items WHERE k = p_k AND n = p_n;
    RETURN v_note;
END
$$;
SELECT create_distributed_function('repro_touch(int, int)', 'p_k', colocate_with => 'repro_items');
