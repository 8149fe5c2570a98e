-- $1 id, $2 workflow, $3 input, $4 cron, $5 zone, $6 policy, $7 limit, $8 grace ms, $9 next fire,
-- $10 previous fire, $11 revision, $12 channel. The revision read is the one before this
-- statement: ours when an earlier try of this create committed.
WITH i AS (
  INSERT INTO {{s}}.schedules (schedule_id, workflow_name, input, cron, time_zone, misfire_policy, catchup_limit,
                             misfire_grace_ms, next_fire_at, prev_fire_at, revision)
  VALUES ($1, $2, $3::jsonb, $4, $5, $6, $7, $8, {{s}}.from_us($9), {{s}}.from_us($10), $11::uuid)
  ON CONFLICT (schedule_id) DO NOTHING
  RETURNING 1),
n AS (SELECT pg_notify($12, '') FROM i)
SELECT (SELECT count(*) FROM i) AS written, (SELECT count(*) FROM n) AS notified,
       (SELECT revision::text FROM {{s}}.schedules WHERE schedule_id = $1) AS revision_before
