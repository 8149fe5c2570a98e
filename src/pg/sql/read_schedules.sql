-- $1 id, or NULL for all
SELECT schedule_id, workflow_name, input::text, cron, time_zone, misfire_policy, catchup_limit, misfire_grace_ms,
       paused, {{s}}.epoch_us(next_fire_at) AS next_fire_us, fires_started, fires_dropped
FROM {{s}}.schedules WHERE $1::text IS NULL OR schedule_id = $1 ORDER BY schedule_id
