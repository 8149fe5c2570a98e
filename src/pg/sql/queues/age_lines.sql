-- Priority aging (QueueSpec::priority_aging, migration 23): the lines of queue $1 due to be looked
-- at (`rises_at` passed; none on a queue without aging) take the level their oldest queued run
-- has risen to (aged_priority.sql), and the time of their next rise; a line at the highest
-- priority waiting is looked at again a step later, in case a higher one comes. Run under the
-- queue's lock (lock_queue.sql), before the admission (admit_queued.sql), which walks the lines
-- by level. The head is the oldest run that may be admitted now (not asked to cancel, past its
-- debounce window); a line without one keeps its level, and is looked at again at the next
-- admission (a line with no queued run at all is the admission's to retire). The head is read
-- again from the runs, so a line whose head ended some other way (a run terminated while queued)
-- is right again at its next rise.
WITH q AS (
  SELECT q.priority_aging_ms AS step_ms, (SELECT max(m.priority) FROM {{s}}.queue_lines m WHERE m.queue = $1) AS top
  FROM {{s}}.queues q WHERE q.name = $1 AND q.priority_aging_ms IS NOT NULL),
due AS (
  SELECT l.concurrency_key AS key, l.priority,
         (SELECT greatest(w.created_at, w.admit_after) FROM {{s}}.workflows w
          WHERE w.queue = $1 AND w.concurrency_key = l.concurrency_key AND w.priority = l.priority
            AND w.status = 'running' AND w.queued AND w.cancel_requested_at IS NULL
            AND (w.admit_after IS NULL OR w.admit_after <= {{now}})
          ORDER BY w.created_at LIMIT 1) AS head_at
  FROM q, {{s}}.queue_lines l WHERE l.queue = $1 AND l.rises_at <= {{now}}),
aged AS (
  SELECT d.key, d.priority, d.head_at, {{line_level}} AS level FROM q, due d WHERE d.head_at IS NOT NULL)
UPDATE {{s}}.queue_lines l
SET level = a.level, head_at = a.head_at,
    rises_at = CASE WHEN a.level >= q.top THEN {{now}} + q.step_ms * interval '1 millisecond'
                    ELSE a.head_at + (a.level::bigint - a.priority + 1) * q.step_ms * interval '1 millisecond' END
FROM q, aged a
WHERE l.queue = $1 AND l.concurrency_key = a.key AND l.priority = a.priority
