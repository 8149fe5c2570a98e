-- What a claim may take, per queue `q.queue` and name `n.name` (json arrays of each); the
-- queue-age gauges read the same, so they measure what a claim would find.
status = 'running' AND wake_at <= {{now}} AND NOT runnable AND NOT queued AND queue = q.queue AND name = n.name
  AND (lease_until IS NULL OR lease_until < {{now}})
