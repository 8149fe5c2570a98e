-- Takes the right to run the body for (activity, key), held until this attempt's lease ends,
-- unless another holds it. Then the task waits instead, in the same statement: handed back
-- (the attempt not counted) until the hold runs out, and the lock row marked `waiting`, so
-- that the holder's release, which has to wait for this statement's row lock, wakes it sooner.
-- $1 run id, $2 lease token, $3 step. One row: locked, and whether the lease was still ours (not after
-- a retry whose first try committed the wait).
WITH k AS (
  INSERT INTO {{s}}.idempotency_locks (activity, key, task_id, lease_token, run_id, step, held_until)
  SELECT name, idempotency_key, task_id, $2, run_id, step, lease_until FROM {{s}}.tasks WHERE run_id = $1::uuid AND step = $3
  ON CONFLICT (activity, key) DO UPDATE
  SET task_id = CASE WHEN {{holder_live}} THEN idempotency_locks.task_id ELSE excluded.task_id END,
      run_id = CASE WHEN {{holder_live}} THEN idempotency_locks.run_id ELSE excluded.run_id END,
      step = CASE WHEN {{holder_live}} THEN idempotency_locks.step ELSE excluded.step END,
      lease_token = CASE WHEN {{holder_live}} THEN idempotency_locks.lease_token ELSE excluded.lease_token END,
      held_until = CASE WHEN {{holder_live}} THEN idempotency_locks.held_until ELSE excluded.held_until END,
      outlives_task = {{holder_live}} AND idempotency_locks.outlives_task,
      waiting = {{holder_live}} OR idempotency_locks.waiting
  RETURNING run_id = $1::uuid AND step = $3 AND lease_token = $2 AS locked,
            coalesce(held_until, (SELECT x.lease_until FROM {{s}}.tasks x
                                  WHERE x.run_id = idempotency_locks.run_id AND x.step = idempotency_locks.step
                                    AND x.lease_token = idempotency_locks.lease_token)) AS holder_until),
r AS (
  UPDATE {{s}}.tasks
  SET status = 'pending', attempt = attempt - 1,
      available_at = coalesce((SELECT holder_until FROM k), {{now}} + interval '1 second'), lease_token = NULL,
      lease_owner = NULL, lease_until = NULL, updated_at = statement_timestamp()
  WHERE run_id = $1::uuid AND step = $3 AND lease_token = $2 AND status = 'running' AND NOT (SELECT locked FROM k)
  RETURNING 1)
SELECT coalesce((SELECT locked FROM k), false) AS locked,  -- no row: the task is gone (finished by another lease)
       EXISTS (SELECT 1 FROM {{s}}.tasks WHERE run_id = $1::uuid AND step = $3 AND lease_token = $2 AND status = 'running')
         AS owned
