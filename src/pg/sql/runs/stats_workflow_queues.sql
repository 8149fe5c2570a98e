-- Per workflow name: the runs waiting for a runner (runnable, or their timer came due, unleased;
-- admitted, when on a named queue) and the age of the oldest.
SELECT w.name, count(*) AS waiting,
       coalesce(extract(epoch FROM max(n.now) - min(CASE WHEN w.runnable THEN w.runnable_since ELSE w.wake_at END)),
                0)::float8 AS oldest
FROM {{s}}.workflows w, (SELECT now() + skew AS now FROM {{s}}.clock) AS n
WHERE w.status = 'running' AND NOT w.queued AND (w.runnable OR w.wake_at <= n.now) AND (w.lease_until IS NULL OR w.lease_until < n.now)
GROUP BY w.name ORDER BY w.name
