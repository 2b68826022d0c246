-- Every row the clients were told was written (INSERT ... RETURNING answered), and how many of them the
-- tables no longer hold. `lost` is 0 when nothing acknowledged was lost.
WITH present AS MATERIALIZED (
    SELECT 'a' AS kind, k, id FROM repro_a
    UNION ALL
    SELECT 'b' AS kind, k, id FROM repro_b
)
SELECT count(*) AS acknowledged, count(*) FILTER (WHERE present.id IS NULL) AS lost
FROM repro_ack LEFT JOIN present USING (kind, k, id);
