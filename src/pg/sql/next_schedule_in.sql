-- Microseconds until the earliest active schedule is due (NULL when there is none).
SELECT {{s}}.epoch_us(min(next_fire_at)) - {{s}}.epoch_us({{now}}) AS due_in_us FROM {{s}}.schedules WHERE NOT paused
