-- Retires the lines $2 (json [{key, priority}]) of queue $1 that still have no queued run: their
-- buckets and rows are locked (lock_empty_lines.sql), so no run joins them unseen. The keys go in
-- as an array, for the primary key's index; the check of each line is one probe (as there).
WITH x AS (SELECT x.key, x.priority FROM jsonb_to_recordset($2::jsonb) x(key text, priority int))
DELETE FROM {{s}}.queue_lines l
USING x
WHERE l.queue = $1 AND l.concurrency_key = ANY (ARRAY(SELECT key FROM x))
  AND l.concurrency_key = x.key AND l.priority = x.priority
  AND (SELECT true FROM {{s}}.workflows w
       WHERE w.queue = $1 AND w.concurrency_key = l.concurrency_key AND w.priority = l.priority
         AND w.status = 'running' AND w.queued
       LIMIT 1) IS NULL
