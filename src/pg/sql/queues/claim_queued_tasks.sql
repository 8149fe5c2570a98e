-- Claims up to $3 waiting tasks of named queue $1 (under its lock: lock_queue.sql, this
-- transaction) of the activities $2 (json array: those the claiming engine runs), leased to owner
-- $4 for each one's timeout plus $5 ms, with claim token $6 and lease tokens from $7 on.
-- - Concurrency: the queue's and each key's (the task's key) count the queue's running tasks as
--   they are now, and those cancelled while running whose lease still runs (their body may not
--   have stopped yet), so no more than a limit allows ever run; an attempt's end (its outcome, a
--   retry's wait) frees its place.
-- - Taken over: a running task whose lease ran out keeps its place, and is claimed again here
--   (oldest lease first, its lost attempt recorded) before any waiting task, within the rate and
--   unless the queue is paused.
-- - Rates: the queue's and each key's count the attempts started in the log (queue_admissions
--   marked `attempt`) within their window; each start goes into the log.
-- - Turns: as in admit_queued.sql, a task's turn is its rank in its key's line (higher priority
--   first, then oldest) after where its key's line starts; higher priority goes first across keys.
-- A paused queue starts nothing (attempts running go on), nor does a queue that is not defined.
WITH RECURSIVE {{attempt_windows}},
running AS (
  SELECT key, count(*) AS n FROM (
    SELECT concurrency_key AS key FROM {{s}}.tasks WHERE queue = $1 AND status = 'running' AND queue <> 'default'
    UNION ALL
    SELECT concurrency_key FROM {{s}}.tasks
    WHERE queue = $1 AND status = 'cancelled' AND queue <> 'default' AND lease_until >= {{now}}) x
  GROUP BY key),
expired AS (
  SELECT e.task_id, e.run_id, e.step, e.concurrency_key AS key, e.lease_until AS since, e.attempt AS old_attempt,
         e.attempt_started_at AS old_started
  FROM jsonb_array_elements_text($2::jsonb) AS n(name), LATERAL (
    SELECT t.task_id, t.run_id, t.step, t.concurrency_key, t.lease_until, t.attempt, t.attempt_started_at
    FROM {{s}}.tasks t
    WHERE t.queue = $1 AND t.name = n.name AND t.status = 'running' AND t.queue <> 'default' AND t.lease_until < {{now}}
    ORDER BY t.lease_until LIMIT $3 FOR UPDATE SKIP LOCKED) e
  WHERE EXISTS (SELECT 1 FROM q WHERE NOT q.paused)
  LIMIT (SELECT greatest(0, least($3::bigint, coalesce(q.rate_count - rated.n, $3::bigint))) FROM q, rated)),
room AS (
  SELECT greatest(0, least($3::bigint - (SELECT count(*) FROM expired),
                           coalesce(q.concurrency - (SELECT coalesce(sum(n), 0) FROM running), $3::bigint),
                           coalesce(q.rate_count - (SELECT n FROM rated) - (SELECT count(*) FROM expired),
                                    $3::bigint))) AS n
  FROM q WHERE NOT q.paused),
keys(key) AS (
  (SELECT concurrency_key FROM {{s}}.tasks WHERE queue = $1 AND status = 'pending' AND queue <> 'default'
   ORDER BY concurrency_key LIMIT 1)
  UNION ALL
  SELECT (SELECT concurrency_key FROM {{s}}.tasks
          WHERE queue = $1 AND status = 'pending' AND queue <> 'default' AND concurrency_key > keys.key
          ORDER BY concurrency_key LIMIT 1)
  FROM keys WHERE keys.key IS NOT NULL),
cand AS (
  SELECT k.key, c.run_id, c.step, c.priority, c.available_at, {{attempt_key_turn}} + c.rank * {{key_step}} AS turn
  FROM keys k CROSS JOIN q LEFT JOIN running r ON r.key = k.key LEFT JOIN key_rated kr ON kr.key = k.key,
  LATERAL (
    SELECT l.*, row_number() OVER (ORDER BY l.priority DESC, l.available_at) AS rank FROM (
      SELECT t.run_id, t.step, t.priority, t.available_at FROM {{s}}.tasks t
      WHERE t.queue = $1 AND t.concurrency_key = k.key AND t.status = 'pending' AND t.queue <> 'default'
        AND t.available_at <= {{now}} AND t.name IN (SELECT jsonb_array_elements_text($2::jsonb))
      ORDER BY t.priority DESC, t.available_at
      LIMIT {{attempt_key_room}}) l) c
  WHERE k.key IS NOT NULL AND (SELECT n FROM room) > 0),
pick AS (
  SELECT key, run_id, step, turn FROM cand ORDER BY priority DESC, turn, available_at
  LIMIT (SELECT coalesce(max(n), 0) FROM room)),
c AS (
  SELECT t.task_id, t.run_id, t.step, t.status AS was, t.available_at AS since, p.key, p.turn,
         t.attempt AS old_attempt, t.attempt_started_at AS old_started
  FROM pick p JOIN {{s}}.tasks t ON t.run_id = p.run_id AND t.step = p.step
  UNION ALL
  SELECT task_id, run_id, step, 'running', since, key, NULL::bigint, old_attempt, old_started FROM expired),
{{lease_queued}},
{{record_lost_attempts}},
logged AS (
  INSERT INTO {{s}}.queue_admissions (queue, concurrency_key, admitted_at, run_id, attempt)
  SELECT $1, c.key, {{now}}, c.run_id, true FROM c JOIN u USING (task_id), q
  WHERE q.rate_count IS NOT NULL OR q.key_rate_count IS NOT NULL),
taken AS (SELECT c.key, c.turn FROM c JOIN u USING (task_id) WHERE c.turn IS NOT NULL),
{{serve_attempt_turns}}
SELECT * FROM u
