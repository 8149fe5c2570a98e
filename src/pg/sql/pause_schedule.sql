-- $1 id, $2 paused, $3 channel
WITH u AS (UPDATE {{s}}.schedules SET paused = $2, updated_at = statement_timestamp() WHERE schedule_id = $1 RETURNING 1),
n AS (SELECT pg_notify($3, '') FROM u)
SELECT (SELECT count(*) FROM u) AS written, (SELECT count(*) FROM n) AS notified
