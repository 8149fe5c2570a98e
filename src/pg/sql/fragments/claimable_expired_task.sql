-- What a claim may take again on the default queue, per name `n.name` of a json array of names:
-- a task whose lease ran out (a named queue's are taken over by its own claim,
-- claim_queued_tasks.sql). The queue-age gauges read the same.
status = 'running' AND queue = 'default' AND name = n.name AND lease_until < {{now}}
