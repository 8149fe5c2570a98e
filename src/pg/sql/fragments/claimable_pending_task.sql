-- What a claim may take on the default queue, per name `n.name` of a json array of names (a
-- named queue's tasks wait for its claim: claim_queued_tasks.sql); the queue-age gauges read the
-- same, so they measure what a claim would find.
status = 'pending' AND queue = 'default' AND name = n.name AND available_at <= {{now}}
