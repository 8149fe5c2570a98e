-- What a claim may take, per name `n.name` of a json array of names; the queue-age gauges read
-- the same, so they measure what a claim would find.
status = 'running' AND name = n.name AND lease_until < {{now}}
