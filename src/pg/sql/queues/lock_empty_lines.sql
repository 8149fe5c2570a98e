-- The lines of queue $1 (queue_lines, migration 22) that have no queued run, of those in $2 (json
-- [{key, priority}]; '': every line of the queue), each returned once its bucket's exclusive
-- lock and its own row's are taken (held to the end of this transaction; not waited for: a line
-- whose bucket or row a joining run holds stays, for a later admission; migration 24). Then
-- retire_lines.sql, a statement of its own: its snapshot sees every run that joined a line before
-- the locks were taken. Each line's check is a scalar subquery with a LIMIT: one index probe (an
-- EXISTS may be planned as a hash of every queued run of the queue).
WITH c AS (
  SELECT x.key, x.priority FROM jsonb_to_recordset(nullif($2, '')::jsonb) x(key text, priority int)
  UNION ALL
  SELECT l.concurrency_key, l.priority FROM {{s}}.queue_lines l WHERE $2 = '' AND l.queue = $1)
SELECT l.concurrency_key AS key, l.priority
FROM c JOIN {{s}}.queue_lines l ON l.queue = $1 AND l.concurrency_key = c.key AND l.priority = c.priority
WHERE CASE WHEN (SELECT true FROM {{s}}.workflows w
                 WHERE w.queue = $1 AND w.concurrency_key = c.key AND w.priority = c.priority
                   AND w.status = 'running' AND w.queued
                 LIMIT 1) IS NULL
           THEN pg_try_advisory_xact_lock({{s}}.queue_line_bucket($1, c.key, c.priority))
           ELSE false END
FOR UPDATE OF l SKIP LOCKED
