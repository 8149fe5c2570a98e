-- What a claim may take again, per queue `q.queue` and name `n.name` (json arrays of each): a
-- task whose lease ran out holds its queue's place already, so any claim that serves its queue
-- takes it on. The queue-age gauges read the same.
status = 'running' AND queue = q.queue AND name = n.name AND lease_until < {{now}}
