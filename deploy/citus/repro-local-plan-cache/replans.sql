-- Run on a worker, in a new session: `psql -v mode=auto|force_custom_plan [-v calls=N] -f replans.sql 2>&1`.
-- Calls repro_touch() N times (20 unless told) on this one connection, with a key whose shard is on this
-- worker, with client_min_messages = debug5: Citus says "Local shard query that is going to be cached"
-- each time it deparses, parses and plans a statement's shard query for its local plan cache
-- (GetLocalShardQueryForCache). Count those lines. Deletes the rows it wrote.
\if :{?calls}
\else
\set calls 20
\endif
SET plan_cache_mode = :'mode';
SELECT min(k) AS key FROM generate_series(1, 1000) AS k
WHERE (SELECT groupid FROM pg_dist_placement
       WHERE shardid = get_shard_id_for_distribution_column('repro_items', k))
    = (SELECT groupid FROM pg_dist_local_group) \gset
SET client_min_messages = debug5;
SELECT count(repro_touch(:key, n)) AS called FROM generate_series(1, :calls) AS n \gset
RESET client_min_messages;
DELETE FROM repro_items WHERE k = :key;
