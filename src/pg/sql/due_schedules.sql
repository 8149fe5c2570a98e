-- Due schedules, locked for the transaction that fires them and advances them. $1 limit
SELECT schedule_id, workflow_name, input::text, cron, time_zone, misfire_policy, catchup_limit, misfire_grace_ms,
       {{s}}.epoch_us(next_fire_at) AS next_fire_us, {{s}}.epoch_us(prev_fire_at) AS prev_fire_us,
       {{s}}.epoch_us({{now}}) AS now_us
FROM {{s}}.schedules WHERE NOT paused AND next_fire_at <= {{now}}
ORDER BY next_fire_at LIMIT $1 FOR UPDATE SKIP LOCKED
