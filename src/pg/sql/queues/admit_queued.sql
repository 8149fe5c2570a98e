-- Admits up to $2 queued runs of queue $1 (under its lock: lock_queue.sql, this transaction) of the
-- workflow names $5 (json array: those the admitting engine runs); $3 workflows channel, $4 ended
-- channel. The queue's and each key's concurrency count the
-- admitted runs (running, not queued) as they are now, so no more than a limit allows are ever
-- admitted; a run's end frees its place. Keys take turns: a run's turn is its rank in its key's
-- line (higher priority first, then oldest first) plus the runs its key has admitted, so a key
-- with 100,000 queued does not hold back a key with 10. Higher priority goes first across keys.
-- Runnable admitted runs waiting for a runner count against $2 too: admitting more than runners
-- take would only lengthen their line, out of turn. A paused queue admits nothing. Queued runs
-- asked to cancel end here (their code never ran), paused or not.
WITH RECURSIVE q AS (SELECT concurrency, key_concurrency, paused FROM {{s}}.queues WHERE name = $1),
running AS (
  SELECT concurrency_key AS key, count(*) AS n FROM {{s}}.workflows
  WHERE queue = $1 AND status = 'running' AND NOT queued AND queue <> 'default'
  GROUP BY concurrency_key),
ready AS (
  SELECT count(*) AS n FROM (
    SELECT 1 FROM {{s}}.workflows
    WHERE queue = $1 AND name IN (SELECT jsonb_array_elements_text($5::jsonb)) AND status = 'running' AND runnable
      AND NOT queued
    LIMIT $2) x),
room AS (
  SELECT greatest(0, least($2::bigint - (SELECT n FROM ready),
                           coalesce(q.concurrency - (SELECT coalesce(sum(n), 0) FROM running), $2::bigint))) AS n
  FROM q WHERE NOT q.paused),
keys(key) AS (
  (SELECT concurrency_key FROM {{s}}.workflows WHERE queue = $1 AND status = 'running' AND queued
   ORDER BY concurrency_key LIMIT 1)
  UNION ALL
  SELECT (SELECT concurrency_key FROM {{s}}.workflows
          WHERE queue = $1 AND status = 'running' AND queued AND concurrency_key > keys.key
          ORDER BY concurrency_key LIMIT 1)
  FROM keys WHERE keys.key IS NOT NULL),
cand AS (
  SELECT c.run_id, c.priority, c.created_at, c.rank + coalesce(r.n, 0) AS turn
  FROM keys k CROSS JOIN q LEFT JOIN running r ON r.key = k.key,
  LATERAL (
    SELECT l.*, row_number() OVER (ORDER BY l.priority DESC, l.created_at) AS rank FROM (
      SELECT w.run_id, w.priority, w.created_at FROM {{s}}.workflows w
      WHERE w.queue = $1 AND w.concurrency_key = k.key AND w.status = 'running' AND w.queued
        AND w.cancel_requested_at IS NULL AND w.name IN (SELECT jsonb_array_elements_text($5::jsonb))
      ORDER BY w.priority DESC, w.created_at
      LIMIT greatest(0, CASE WHEN k.key = '' OR q.key_concurrency IS NULL THEN $2::bigint
                             ELSE least($2::bigint, q.key_concurrency - coalesce(r.n, 0)) END)) l) c
  WHERE k.key IS NOT NULL AND NOT q.paused),
pick AS (SELECT run_id FROM cand ORDER BY priority DESC, turn, created_at LIMIT (SELECT coalesce(max(n), 0) FROM room)),
a AS (
  UPDATE {{s}}.workflows w
  SET queued = false, runnable = true, runnable_since = statement_timestamp(), updated_at = statement_timestamp()
  FROM pick WHERE w.run_id = pick.run_id AND w.status = 'running' AND w.queued
  RETURNING w.run_id),
an AS (SELECT pg_notify($3, '') WHERE EXISTS (SELECT 1 FROM a)),
r AS (
  SELECT run_id FROM {{s}}.workflows
  WHERE queue = $1 AND status = 'running' AND queued AND cancel_requested_at IS NOT NULL LIMIT $2),
{{cancel_queued}}
SELECT (SELECT count(*) FROM a) AS admitted, (SELECT count(*) FROM w) AS cancelled,
       (SELECT count(*) FROM an) + (SELECT count(*) FROM n) AS notified
