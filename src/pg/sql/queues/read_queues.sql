-- The queues (all, or only $1 when it is not ''), by name, with what each holds now: its queued
-- runs, its admitted runs (running, not queued), the queued runs held back by their key's limit
-- (`key_throttled`), and when its oldest queued run was started; its activity tasks due to run
-- and waiting (`activities_waiting`) and its attempts running.
SELECT q.name, coalesce(q.concurrency, 0) AS concurrency, coalesce(q.key_concurrency, 0) AS key_concurrency,
       coalesce(q.rate_count, 0) AS rate_count, coalesce(q.rate_period_ms, 0) AS rate_period_ms,
       coalesce(q.key_rate_count, 0) AS key_rate_count, coalesce(q.key_rate_period_ms, 0) AS key_rate_period_ms, q.paused,
       {{s}}.epoch_us(q.paused_at) AS paused_at_us, coalesce(q.paused_by, '') AS paused_by,
       coalesce(q.paused_reason, '') AS paused_reason, q.key_weights,
       coalesce(q.priority_aging_ms, 0) AS priority_aging_ms,
       coalesce(sum(k.queued), 0) AS queued, coalesce(sum(k.running), 0) AS running,
       coalesce(sum(k.queued) FILTER (WHERE k.key <> '' AND k.running >= q.key_concurrency), 0) AS key_throttled,
       {{s}}.epoch_us(min(k.oldest)) AS oldest_queued_us, {{s}}.epoch_us(statement_timestamp()) AS now_us,
       max(a.waiting) AS activities_waiting, max(a.running) AS activities_running
FROM {{s}}.queues q
LEFT JOIN LATERAL (
  SELECT concurrency_key AS key, count(*) FILTER (WHERE queued) AS queued, count(*) FILTER (WHERE NOT queued) AS running,
         min(created_at) FILTER (WHERE queued) AS oldest
  FROM {{s}}.workflows WHERE queue = q.name AND status = 'running' GROUP BY concurrency_key) k ON true
CROSS JOIN LATERAL (
  SELECT (SELECT count(*) FROM {{s}}.tasks
          WHERE queue = q.name AND status = 'pending' AND queue <> 'default' AND available_at <= {{now}}) AS waiting,
         (SELECT count(*) FROM {{s}}.tasks WHERE queue = q.name AND status = 'running' AND queue <> 'default') AS running) a
WHERE $1 = '' OR q.name = $1
GROUP BY q.name, q.key_weights ORDER BY q.name
