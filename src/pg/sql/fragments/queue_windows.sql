-- The CTEs a queue's admission or claim counts with: `q` the limits of queue {{queue}} and its
-- turn ({{turn}}) for the kind of work counted (no row when it is not defined), `rated` the entries of its rate log of the kind `{{kind}}` within its
-- window (how many, and the oldest), `key_rated` the same per concurrency key.
q AS (
  SELECT concurrency, key_concurrency, paused, rate_count, key_rate_count,
         {{now}} - rate_period_ms * interval '1 millisecond' AS rate_since,
         {{now}} - key_rate_period_ms * interval '1 millisecond' AS key_rate_since,
         rate_period_ms, key_rate_period_ms, key_weights, priority_aging_ms AS aging_ms, {{turn}} AS turn
  FROM {{s}}.queues WHERE name = {{queue}}),
rated AS (
  SELECT count(*) AS n, min(l.admitted_at) AS oldest FROM q, {{s}}.queue_admissions l
  WHERE q.rate_count IS NOT NULL AND l.queue = {{queue}} AND l.admitted_at > q.rate_since AND {{kind}}),
key_rated AS (
  SELECT l.concurrency_key AS key, count(*) AS n, min(l.admitted_at) AS oldest FROM q, {{s}}.queue_admissions l
  WHERE q.key_rate_count IS NOT NULL AND l.queue = {{queue}} AND l.admitted_at > q.key_rate_since AND {{kind}}
  GROUP BY l.concurrency_key),
-- Entries older than both windows count no more: they go.
forgotten AS (
  DELETE FROM {{s}}.queue_admissions l USING q
  WHERE l.queue = {{queue}}
    AND l.admitted_at <= least(coalesce(q.rate_since, q.key_rate_since), coalesce(q.key_rate_since, q.rate_since)))
