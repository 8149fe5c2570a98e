
DELETE FROM {{s}}.schedules WHERE schedule_id = $1 RETURNING 1
