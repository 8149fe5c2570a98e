-- The paused workflow and activity types: the workflows first, each kind by name.
SELECT kind, name, {{s}}.epoch_us(paused_at) AS paused_at_us, paused_by, paused_reason
FROM {{s}}.paused_types ORDER BY kind DESC, name
