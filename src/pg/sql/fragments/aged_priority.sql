-- The priority that queued work of priority {{priority}}, waiting since {{since}}, has risen to on
-- a queue whose aging step is {{step_ms}} milliseconds (QueueSpec::priority_aging; NULL: no aging,
-- it stays {{priority}}): one higher for each whole step waited, up to {{top}}, the highest
-- priority waiting on the queue, and never lower than its own.
CASE WHEN {{step_ms}} IS NULL THEN {{priority}}
     ELSE greatest({{priority}}, least({{top}}, {{priority}} + floor(greatest(0, extract(epoch FROM {{now}} - {{since}}))
                                                                    * 1000 / {{step_ms}})))::int END
