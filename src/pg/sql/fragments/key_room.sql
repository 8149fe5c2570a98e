-- How many of key `k.key`'s waiting runs or tasks an admission or claim offers (the most it asks
-- for is {{most}}): the room `room` leaves, less for a key its limits hold back (`r.n` running,
-- `kr.n` in its rate window); the work without a key (`''`) has no key limits.
greatest(0, CASE WHEN k.key = '' THEN (SELECT n FROM room)
                 ELSE least((SELECT n FROM room), coalesce(q.key_concurrency - coalesce(r.n, 0), {{most}}::bigint),
                            coalesce(q.key_rate_count - coalesce(kr.n, 0), {{most}}::bigint)) END)
