-- Schedules the next attempt after a failed one, fenced by the lease, unless it would start
-- past the retry horizon; it lets go of its idempotency key meanwhile (and says whether
-- tasks wait for it), unless its body runs on (a timed-out attempt: outlives_task).
-- $1 run id, $2 lease token, $3 delay ms, $4 error type, $5 error message, $6 step
WITH t AS (
  SELECT task_id, run_id, step, attempt, attempt_started_at, {{now}} + $3::bigint * interval '1 millisecond' AS retry_at,
         {{now}} + $3::bigint * interval '1 millisecond'
           <= first_started_at + coalesce((options->>'max_retry_horizon_ms')::bigint, {{default_retry_horizon_ms}}) * interval '1 millisecond' AS within
  FROM {{s}}.tasks
  WHERE run_id = $1::uuid AND step = $6 AND lease_token = $2 AND status = 'running' AND lease_until >= {{now}}
  FOR UPDATE),
u AS (
  UPDATE {{s}}.tasks k
  SET status = 'pending', available_at = t.retry_at, error_type = $4, error_message = $5, lease_token = NULL,
      lease_owner = NULL, lease_until = NULL, updated_at = statement_timestamp()
  FROM t WHERE k.run_id = t.run_id AND k.step = t.step AND t.within
  RETURNING k.task_id),
a AS (
  INSERT INTO {{s}}.attempts (task_id, run_id, step, attempt, started_at, ended_at, outcome, error_type, error_message,
                            retry_at)
  SELECT t.task_id, t.run_id, t.step, t.attempt, t.attempt_started_at, {{now}}, 'failed', $4, $5, t.retry_at
  FROM t JOIN u USING (task_id)
  ON CONFLICT DO NOTHING),
l AS (
  DELETE FROM {{s}}.idempotency_locks
  WHERE (activity, key) IN (SELECT name, idempotency_key FROM {{s}}.tasks
                            WHERE run_id = $1::uuid AND step = $6 AND idempotency_key IS NOT NULL)
    AND task_id = (SELECT task_id FROM u) AND lease_token = $2 AND NOT outlives_task
  RETURNING waiting)
SELECT (SELECT count(*) FROM t) AS owned, (SELECT count(*) FROM u) AS retried,
       coalesce((SELECT bool_or(waiting) FROM l), false) AS key_waiters
