-- Queue $1's limits: $2 concurrency, $3 key concurrency (0: none). Run under the queue's lock
-- (lock_queue.sql) so that no admission counts with the old limits meanwhile; a lower limit
-- admits nothing until the admitted runs are under it. `changed` 0 when it was so already.
-- $4 workflows channel: a higher limit may admit more now.
WITH u AS (
  INSERT INTO {{s}}.queues AS o (name, concurrency, key_concurrency)
  VALUES ($1, nullif($2::int, 0), nullif($3::int, 0))
  ON CONFLICT (name) DO UPDATE SET concurrency = excluded.concurrency, key_concurrency = excluded.key_concurrency,
                                   updated_at = statement_timestamp()
  WHERE (o.concurrency, o.key_concurrency) IS DISTINCT FROM (excluded.concurrency, excluded.key_concurrency)
  RETURNING 1),
n AS (SELECT pg_notify($4, '') FROM u)
SELECT (SELECT count(*) FROM u) AS changed, (SELECT count(*) FROM n) AS notified
