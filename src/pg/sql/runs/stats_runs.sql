-- How many runs of each status, and how many running ones are blocked.
SELECT w.status, count(*) AS n, count(*) FILTER (WHERE w.status = 'running' AND w.blocked_at IS NOT NULL) AS blocked
FROM {{s}}.workflows w GROUP BY w.status
