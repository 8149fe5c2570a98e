-- How far one run or task of key `k.key` moves its line on in queue `q`'s turns (queue_windows.sql):
-- a whole turn ({{turn_unit}}) divided by the key's weight (QueueSpec::key_weights, 1 when not
-- listed), so a key of weight 3 has three turns in each round where another has one.
({{turn_unit}} / coalesce((q.key_weights ->> k.key)::int, 1))
