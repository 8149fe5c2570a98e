-- Per activity name: ready (what a claim would take: due, or its attempt's lease ran out, as the
-- queue-age gauge reads it), delayed, running, and the age of the oldest ready task.
WITH t AS (
  SELECT name, status = 'pending' AND available_at <= n.now AS due, status = 'running' AND lease_until < n.now AS lost,
         status = 'pending' AND available_at > n.now AS delayed, status = 'running' AND lease_until >= n.now AS running,
         CASE WHEN status = 'pending' THEN available_at ELSE lease_until END AS since, n.now
  FROM {{s}}.tasks, (SELECT now() + skew AS now FROM {{s}}.clock) AS n WHERE status IN ('pending', 'running'))
SELECT name, count(*) FILTER (WHERE due OR lost) AS ready, count(*) FILTER (WHERE delayed) AS delayed,
       count(*) FILTER (WHERE running) AS running,
       coalesce(extract(epoch FROM max(now) - min(since) FILTER (WHERE due OR lost)), 0)::float8 AS oldest
FROM t GROUP BY name ORDER BY name
