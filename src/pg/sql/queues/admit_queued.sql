-- Admits up to $2 queued runs of queue $1 (under its lock: lock_queue.sql, this transaction) of the
-- workflow names $5 (json array: those the admitting engine runs); $3 workflows channel, $4 ended
-- channel.
-- - Concurrency: the queue's and each key's count the admitted runs (running, not queued) as they
--   are now, so no more than a limit allows are ever admitted; a run's end frees its place.
-- - Rates: the queue's and each key's count the admissions in the log (queue_admissions, not the
--   attempts of activities on the queue) within their window, on the database clock; each
--   admission goes into the log, and entries older than both windows go.
-- - Debounce: a queued run is not admitted before its admit_after.
-- - Turns: a run's turn is its rank in its key's line (higher priority first, then oldest first),
--   each rank a step (key_step.sql: a whole turn, less for a key with a weight), after where the
--   key's line starts (key_turn.sql: after its latest turn served, or at the
--   queue's turn), so a key with 100,000 queued does not hold back a key with 10, even when none
--   of either key's runs is running. Higher priority goes first across keys. Each key offers no
--   more runs than there is room for, and no key is read when there is none. Each key's latest
--   turn served, and the queue's, are kept (serve_turns.sql).
-- - Lines (queue_lines, migration 22): only the keys of the first $2 lines in turn (higher level
--   first, then served longest ago) that have a run to admit and room for it are read, and every
--   key with a weight: no key further on has a run whose turn comes sooner (a weight is what
--   could move a key's runs ahead of its place in line). A key served gets its turn on its lines.
-- - Aging (QueueSpec::priority_aging): "priority" above is, on a queue with aging, the priority a
--   run has risen to (aged_priority.sql), and a line's the level age_lines.sql gave it, in this
--   transaction before this statement.
-- - Runnable admitted runs waiting for a runner count against $2 too: admitting more than runners
--   take would only lengthen their line, out of turn.
-- A paused queue admits nothing. Queued runs asked to cancel end here (their code never ran).
-- `retry_in_ms`: when a full window frees a place or a debounced run comes due (NULL: neither).
-- `emptied`: the lines (json [{key, priority}]) of the runs admitted or cancelled, which may have
-- no run left (retire_lines.sql); `short`: fewer lines had a run to admit than there was room for.
WITH RECURSIVE {{run_windows}},
running AS (
  SELECT concurrency_key AS key, count(*) AS n FROM {{s}}.workflows
  WHERE queue = $1 AND status = 'running' AND NOT queued AND queue <> 'default'
  GROUP BY concurrency_key),
ready AS (
  SELECT count(*) AS n FROM (
    SELECT 1 FROM {{s}}.workflows
    WHERE queue = $1 AND name IN (SELECT jsonb_array_elements_text($5::jsonb)) AND status = 'running'
      AND runnable AND NOT queued
    LIMIT $2) x),
room AS (
  SELECT greatest(0, least($2::bigint - (SELECT n FROM ready),
                           coalesce(q.concurrency - (SELECT coalesce(sum(n), 0) FROM running), $2::bigint),
                           coalesce(q.rate_count - (SELECT n FROM rated), $2::bigint))) AS n
  FROM q WHERE NOT q.paused),
-- The lines in turn, one index probe each (a plan that sorts or joins them all would read every
-- line, and a table's statistics are not there to count on), until $2 of them have a run to
-- admit and room for it: highest level first (a line's priority, or on a queue with aging what
-- its oldest run's has risen to: age_lines.sql), then served longest ago, then by key.
walk(key, priority, level, served, admissible, found) AS (
  SELECT x.*, x.admissible::int FROM (
    SELECT l.concurrency_key, l.priority, l.level, l.served, {{line_admissible}} AS admissible
    FROM {{s}}.queue_lines l
    WHERE l.queue = $1 AND (SELECT coalesce(max(n), 0) FROM room) > 0
      AND l.level = (SELECT max(m.level) FROM {{s}}.queue_lines m WHERE m.queue = $1)
    ORDER BY l.served, l.concurrency_key, l.priority LIMIT 1) x
  UNION ALL
  SELECT x.*, v.found + x.admissible::int FROM walk v, LATERAL (
    SELECT l.concurrency_key, l.priority, l.level, l.served, {{line_admissible}} AS admissible
    FROM (
      (SELECT * FROM {{s}}.queue_lines l
       WHERE l.queue = $1 AND l.level = v.level
         AND (l.served, l.concurrency_key, l.priority) > (v.served, v.key, v.priority)
       ORDER BY l.served, l.concurrency_key, l.priority LIMIT 1)
      UNION ALL
      (SELECT * FROM {{s}}.queue_lines l
       WHERE l.queue = $1
         AND l.level = (SELECT max(m.level) FROM {{s}}.queue_lines m WHERE m.queue = $1 AND m.level < v.level)
       ORDER BY l.served, l.concurrency_key, l.priority LIMIT 1)
      LIMIT 1) l) x
  WHERE v.found < (SELECT coalesce(max(n), 0) FROM room)),
keys(key) AS (
  SELECT key FROM walk WHERE admissible
  UNION
  SELECT l.concurrency_key FROM q, jsonb_object_keys(q.key_weights) wk(key), LATERAL (
    SELECT l.concurrency_key FROM {{s}}.queue_lines l WHERE l.queue = $1 AND l.concurrency_key = wk.key LIMIT 1) l
  WHERE (SELECT n FROM room) > 0),
-- Each key's next runs, ranked by their priority (risen, on a queue with aging: a line at a
-- time, as the oldest of each priority rose most) then oldest first.
top AS (SELECT max(m.priority) AS p FROM {{s}}.queue_lines m WHERE m.queue = $1),
cand AS (
  SELECT k.key, c.run_id, c.priority, c.aged, c.created_at, {{run_key_turn}} + c.rank * {{key_step}} AS turn
  FROM keys k CROSS JOIN q LEFT JOIN running r ON r.key = k.key LEFT JOIN key_rated kr ON kr.key = k.key,
  LATERAL (
    SELECT o.* FROM (
      SELECT l.*, row_number() OVER (ORDER BY l.aged DESC, l.created_at) AS rank FROM (
        (SELECT w.run_id, w.priority, w.priority AS aged, w.created_at FROM {{s}}.workflows w
         WHERE q.aging_ms IS NULL AND w.queue = $1 AND w.concurrency_key = k.key AND w.status = 'running' AND w.queued
           AND {{admissible}}
         ORDER BY w.priority DESC, w.created_at
         LIMIT {{run_key_room}})
        UNION ALL
        (SELECT h.* FROM {{s}}.queue_lines ln, LATERAL (
           SELECT w.run_id, w.priority, {{run_aged_priority}} AS aged, w.created_at FROM {{s}}.workflows w
           WHERE w.queue = $1 AND w.concurrency_key = k.key AND w.priority = ln.priority AND w.status = 'running'
             AND w.queued AND {{admissible}}
           ORDER BY w.created_at
           LIMIT {{run_key_room}}) h
         WHERE q.aging_ms IS NOT NULL AND ln.queue = $1 AND ln.concurrency_key = k.key)) l) o
    WHERE o.rank <= {{run_key_room}}) c
  WHERE (SELECT n FROM room) > 0),
pick AS (
  SELECT key, run_id, priority, turn FROM cand ORDER BY aged DESC, turn, created_at
  LIMIT (SELECT coalesce(max(n), 0) FROM room)),
a AS (
  UPDATE {{s}}.workflows w
  SET queued = false, runnable = true, runnable_since = statement_timestamp(), updated_at = statement_timestamp()
  -- By their ids (a probe of the primary key each), not a join or an index on status, which may
  -- read every queued or running run: the IS TRUE keeps the status from being an index condition.
  WHERE w.run_id = ANY (ARRAY(SELECT run_id FROM pick)) AND (w.status = 'running' AND w.queued) IS TRUE
  RETURNING w.run_id, w.concurrency_key),
logged AS (
  INSERT INTO {{s}}.queue_admissions (queue, concurrency_key, admitted_at, run_id)
  SELECT $1, a.concurrency_key, {{now}}, a.run_id FROM a, q WHERE q.rate_count IS NOT NULL OR q.key_rate_count IS NOT NULL),
taken AS (SELECT pick.key, pick.turn FROM pick JOIN a USING (run_id)),
{{serve_run_turns}},
r AS (
  SELECT run_id, concurrency_key, priority FROM {{s}}.workflows
  WHERE queue = $1 AND status = 'running' AND queued AND cancel_requested_at IS NOT NULL LIMIT $2),
-- The lines whose runs were admitted or ended here: their heads may have moved on, so on a
-- queue with aging they are due to be looked at (age_lines.sql) at the next admission.
moved AS (
  SELECT key, priority FROM pick JOIN a USING (run_id) UNION SELECT concurrency_key, priority FROM r),
touched AS (SELECT key FROM taken_keys UNION SELECT key FROM moved),
lines_served AS (
  UPDATE {{s}}.queue_lines l
  SET served = coalesce(tk.served, l.served),
      rises_at = CASE WHEN l.rises_at > '-infinity' AND (l.concurrency_key, l.priority) IN (SELECT key, priority FROM moved)
                      THEN '-infinity'::timestamptz ELSE l.rises_at END
  FROM touched c LEFT JOIN taken_keys tk ON tk.key = c.key
  WHERE l.queue = $1 AND l.concurrency_key = ANY (ARRAY(SELECT key FROM touched))  -- for the index
    AND l.concurrency_key = c.key
    AND (l.served <> coalesce(tk.served, l.served)
         OR (l.rises_at > '-infinity' AND (l.concurrency_key, l.priority) IN (SELECT key, priority FROM moved)))),
an AS (SELECT pg_notify($3, '') WHERE EXISTS (SELECT 1 FROM a)),
{{cancel_queued}}
SELECT (SELECT count(*) FROM a) AS admitted, (SELECT count(*) FROM w) AS cancelled,
       (SELECT count(*) FROM an) + (SELECT count(*) FROM n) AS notified,
       (SELECT ceil(extract(epoch FROM least(
                  {{rate_frees_at}},
                  (SELECT min(d.admit_after) FROM {{s}}.workflows d
                   WHERE d.queue = $1 AND d.status = 'running' AND d.queued AND d.admit_after > {{now}})) - {{now}}) * 1000)::bigint
        FROM q, rated) AS retry_in_ms,
       (SELECT jsonb_agg(jsonb_build_object('key', e.key, 'priority', e.priority)) FROM moved e) AS emptied,
       (SELECT count(*) FROM walk WHERE admissible) < (SELECT coalesce(max(n), 0) FROM room) AS short
