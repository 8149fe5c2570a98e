-- The busiest $2 concurrency keys of queue $1 ('' is the runs started without one): queued and
-- admitted runs of each, and when its oldest queued run was started; most queued first.
SELECT concurrency_key AS key, count(*) FILTER (WHERE queued) AS queued, count(*) FILTER (WHERE NOT queued) AS running,
       {{s}}.epoch_us(min(created_at) FILTER (WHERE queued)) AS oldest_queued_us,
       {{s}}.epoch_us(statement_timestamp()) AS now_us
FROM {{s}}.workflows WHERE queue = $1 AND status = 'running'
GROUP BY concurrency_key ORDER BY count(*) FILTER (WHERE queued) DESC, count(*) DESC, concurrency_key LIMIT $2
