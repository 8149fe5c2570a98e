-- Queue $1's limits: $2 concurrency, $3 key concurrency, $4 admissions a $5 ms period, $6 admissions
-- per key a $7 ms period, $10 ms a step of priority aging (0: none of that kind), $9 the keys'
-- weights (json object, key to weight).
-- Run under the queue's lock (lock_queue.sql) so that no admission counts with the old limits
-- meanwhile; a lower limit admits nothing until the admitted runs are under it. `changed` 0 when
-- it was so already. $8 workflows channel: a higher limit may admit more now. When the aging
-- changes, the queue's lines (migration 23) are due to be aged again, or back at their priority.
WITH v AS (
  SELECT $1 AS name, nullif($2::int, 0) AS concurrency, nullif($3::int, 0) AS key_concurrency,
         nullif($4::int, 0) AS rate_count, nullif($5::bigint, 0) AS rate_period_ms,
         nullif($6::int, 0) AS key_rate_count, nullif($7::bigint, 0) AS key_rate_period_ms,
         $9::jsonb AS key_weights, nullif($10::bigint, 0) AS priority_aging_ms),
u AS (
  INSERT INTO {{s}}.queues AS o (name, concurrency, key_concurrency, rate_count, rate_period_ms, key_rate_count,
                                 key_rate_period_ms, key_weights, priority_aging_ms)
  SELECT * FROM v
  ON CONFLICT (name) DO UPDATE
  SET concurrency = excluded.concurrency, key_concurrency = excluded.key_concurrency, rate_count = excluded.rate_count,
      rate_period_ms = excluded.rate_period_ms, key_rate_count = excluded.key_rate_count,
      key_rate_period_ms = excluded.key_rate_period_ms, key_weights = excluded.key_weights,
      priority_aging_ms = excluded.priority_aging_ms, updated_at = statement_timestamp()
  WHERE (o.concurrency, o.key_concurrency, o.rate_count, o.rate_period_ms, o.key_rate_count, o.key_rate_period_ms,
         o.key_weights, o.priority_aging_ms)
        IS DISTINCT FROM (excluded.concurrency, excluded.key_concurrency, excluded.rate_count, excluded.rate_period_ms,
                          excluded.key_rate_count, excluded.key_rate_period_ms, excluded.key_weights,
                          excluded.priority_aging_ms)
  RETURNING 1),
relined AS (
  UPDATE {{s}}.queue_lines l
  SET level = CASE WHEN v.priority_aging_ms IS NULL THEN l.priority ELSE l.level END,
      rises_at = CASE WHEN v.priority_aging_ms IS NOT NULL THEN '-infinity'::timestamptz END
  FROM v WHERE l.queue = $1 AND EXISTS (SELECT 1 FROM u)),
n AS (SELECT pg_notify($8, '') FROM u)
SELECT (SELECT count(*) FROM u) AS changed, (SELECT count(*) FROM n) AS notified
