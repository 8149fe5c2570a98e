-- When the next attempt on named queue $1 may start as its rate windows go, in ms from now
-- (NULL: no window is full). Read after a claim (claim_queued_tasks.sql) that found less than it
-- had room for, so the claimer comes back as a place frees.
WITH {{attempt_windows}}
SELECT ceil(extract(epoch FROM {{rate_frees_at}} - {{now}}) * 1000)::bigint AS retry_in_ms FROM q, rated
