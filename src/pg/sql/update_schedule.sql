-- The same parameters; the next fire is recomputed by the caller, so a changed cron applies at once.
WITH u AS (
  UPDATE {{s}}.schedules
  SET workflow_name = $2, input = $3::jsonb, cron = $4, time_zone = $5, misfire_policy = $6, catchup_limit = $7,
      misfire_grace_ms = $8, next_fire_at = {{s}}.from_us($9), prev_fire_at = {{s}}.from_us($10), revision = $11::uuid,
      updated_at = statement_timestamp()
  WHERE schedule_id = $1
  RETURNING 1),
n AS (SELECT pg_notify($12, '') FROM u)
SELECT (SELECT count(*) FROM u) AS written, (SELECT count(*) FROM n) AS notified
