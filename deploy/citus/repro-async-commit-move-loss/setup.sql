-- Two colocated tables distributed by `k` over 8 shards, and the client's record of every row it was told
-- was written (`repro_ack`, a plain table on the coordinator: never moved). Run on the coordinator.
DROP TABLE IF EXISTS repro_ack, repro_b, repro_a;
SET citus.shard_count = 8;
CREATE TABLE repro_a (k int NOT NULL, id bigint NOT NULL, note text NOT NULL, PRIMARY KEY (k, id));
CREATE TABLE repro_b (k int NOT NULL, id bigint NOT NULL, note text NOT NULL, PRIMARY KEY (k, id));
SELECT create_distributed_table('repro_a', 'k');
SELECT create_distributed_table('repro_b', 'k', colocate_with => 'repro_a');
CREATE TABLE repro_ack (kind text NOT NULL, k int NOT NULL, id bigint NOT NULL, PRIMARY KEY (kind, id));
