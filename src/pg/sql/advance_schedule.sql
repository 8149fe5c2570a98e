-- $1 id, $2 next fire, $3 previous fire, $4 runs started, $5 fires dropped
UPDATE {{s}}.schedules
SET next_fire_at = {{s}}.from_us($2), prev_fire_at = {{s}}.from_us($3), fires_started = fires_started + $4,
    fires_dropped = fires_dropped + $5, updated_at = statement_timestamp()
WHERE schedule_id = $1
