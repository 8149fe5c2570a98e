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
-- - Aging (QueueSpec::priority_aging): "priority" above is, on a queue with aging, the priority a
--   task has risen to since it came due (aged_priority.sql).
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
-- The keys with tasks waiting, one index probe each (on a queue without aging).
keys(key) AS (
  (SELECT concurrency_key FROM {{s}}.tasks
   WHERE queue = $1 AND status = 'pending' AND queue <> 'default' AND (SELECT aging_ms FROM q) IS NULL
   ORDER BY concurrency_key LIMIT 1)
  UNION ALL
  SELECT (SELECT concurrency_key FROM {{s}}.tasks
          WHERE queue = $1 AND status = 'pending' AND queue <> 'default' AND concurrency_key > keys.key
          ORDER BY concurrency_key LIMIT 1)
  FROM keys WHERE keys.key IS NOT NULL),
-- On a queue with aging, each key's priorities with tasks waiting, one index probe each: the
-- oldest of each priority has risen most.
prios(key, priority) AS (
  (SELECT t.concurrency_key, t.priority FROM {{s}}.tasks t, q
   WHERE q.aging_ms IS NOT NULL AND t.queue = $1 AND t.status = 'pending' AND t.queue <> 'default'
   ORDER BY t.concurrency_key, t.priority DESC LIMIT 1)
  UNION ALL
  SELECT n.* FROM prios p, LATERAL (
    (SELECT t.concurrency_key, t.priority FROM {{s}}.tasks t
     WHERE t.queue = $1 AND t.status = 'pending' AND t.queue <> 'default' AND t.concurrency_key = p.key
       AND t.priority < p.priority
     ORDER BY t.priority DESC LIMIT 1)
    UNION ALL
    (SELECT t.concurrency_key, t.priority FROM {{s}}.tasks t
     WHERE t.queue = $1 AND t.status = 'pending' AND t.queue <> 'default' AND t.concurrency_key > p.key
     ORDER BY t.concurrency_key, t.priority DESC LIMIT 1)
    LIMIT 1) n),
top AS (SELECT max(priority) AS p FROM prios),
-- Each key's next tasks (each priority's, with aging), with the priority they have risen to.
offered AS (
  SELECT k.key, c.* FROM keys k CROSS JOIN q LEFT JOIN running r ON r.key = k.key LEFT JOIN key_rated kr ON kr.key = k.key,
  LATERAL (
    SELECT t.run_id, t.step, t.priority, t.priority AS aged, t.available_at FROM {{s}}.tasks t
    WHERE t.queue = $1 AND t.concurrency_key = k.key AND t.status = 'pending' AND t.queue <> 'default'
      AND t.available_at <= {{now}} AND t.name IN (SELECT jsonb_array_elements_text($2::jsonb))
    ORDER BY t.priority DESC, t.available_at
    LIMIT {{attempt_key_room}}) c
  WHERE k.key IS NOT NULL AND (SELECT n FROM room) > 0
  UNION ALL
  SELECT k.key, c.* FROM prios k CROSS JOIN q LEFT JOIN running r ON r.key = k.key LEFT JOIN key_rated kr ON kr.key = k.key,
  LATERAL (
    SELECT t.run_id, t.step, t.priority, {{attempt_aged_priority}} AS aged, t.available_at FROM {{s}}.tasks t
    WHERE t.queue = $1 AND t.concurrency_key = k.key AND t.priority = k.priority AND t.status = 'pending'
      AND t.queue <> 'default' AND t.available_at <= {{now}} AND t.name IN (SELECT jsonb_array_elements_text($2::jsonb))
    ORDER BY t.available_at
    LIMIT {{attempt_key_room}}) c
  WHERE (SELECT n FROM room) > 0),
cand AS (
  SELECT k.key, k.run_id, k.step, k.aged, k.available_at, {{attempt_key_turn}} + k.rank * {{key_step}} AS turn
  FROM (SELECT o.*, row_number() OVER (PARTITION BY o.key ORDER BY o.aged DESC, o.available_at) AS rank
        FROM offered o) k
  CROSS JOIN q LEFT JOIN running r ON r.key = k.key LEFT JOIN key_rated kr ON kr.key = k.key
  WHERE k.rank <= {{attempt_key_room}}),
pick AS (
  SELECT key, run_id, step, turn FROM cand ORDER BY aged DESC, turn, available_at
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
