-- When a full rate window of `q` (queue_windows.sql) frees a place: its oldest entry's time plus
-- the period, the earliest of the queue's window and its keys' (NULL: none is full).
least(CASE WHEN rated.n >= q.rate_count THEN rated.oldest + q.rate_period_ms * interval '1 millisecond' END,
      (SELECT min(kr.oldest) FROM key_rated kr WHERE kr.n >= q.key_rate_count)
        + q.key_rate_period_ms * interval '1 millisecond')
