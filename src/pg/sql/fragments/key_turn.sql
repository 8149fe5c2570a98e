-- Where key `k.key`'s line starts in queue `q`'s turns (queue_windows.sql): after its latest
-- turn served, or at the queue's turn when it has none or that one is behind.
greatest(q.turn, coalesce((SELECT ks.served FROM {{s}}.queue_keys ks
                           WHERE ks.queue = $1 AND ks.attempt = {{attempt}} AND ks.concurrency_key = k.key), q.turn))
