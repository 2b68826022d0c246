-- Run on a worker, in a new session: `psql -v mode=auto|force_custom_plan [-v calls=N] -f check.sql`.
-- Calls repro_touch() N times, then N times more, on this one connection, with a key whose shard is on
-- this worker (so Citus executes its statements locally), and prints this backend's memory at the start,
-- after N calls and after 2N: all of it (pg_backend_memory_contexts) and the part in the plans PL/pgSQL
-- keeps for repro_touch()'s three statements (their CachedPlan contexts, where Citus's local plan cache
-- lives). Deletes the rows it wrote.
\if :{?calls}
\else
\set calls 300
\endif
SET plan_cache_mode = :'mode';
SELECT min(k) AS key FROM generate_series(1, 1000) AS k
WHERE (SELECT groupid FROM pg_dist_placement
       WHERE shardid = get_shard_id_for_distribution_column('repro_items', k))
    = (SELECT groupid FROM pg_dist_local_group) \gset
CREATE TEMPORARY TABLE repro_memory (calls int, backend_bytes bigint, cached_plan_bytes bigint);
PREPARE repro_measure(int) AS
INSERT INTO repro_memory
SELECT $1, sum(total_bytes),
       coalesce(sum(used_bytes) FILTER (WHERE name = 'CachedPlan' AND ident LIKE '%repro_items%'), 0)
FROM pg_backend_memory_contexts;
EXECUTE repro_measure(0);
SELECT count(repro_touch(:key, n)) AS called FROM generate_series(1, :calls) AS n \gset
EXECUTE repro_measure(:calls);
SELECT count(repro_touch(:key, n)) AS called FROM generate_series(:calls + 1, 2 * :calls) AS n \gset
EXECUTE repro_measure(2 * :calls);
DELETE FROM repro_items WHERE k = :key;
SELECT current_setting('plan_cache_mode') AS plan_cache_mode, calls,
       round(backend_bytes / 1048576.0, 1) AS backend_mb,
       round(cached_plan_bytes / 1048576.0, 1) AS cached_plan_mb
FROM repro_memory ORDER BY calls;
