-- Every attempt of run $1's activity steps $2 (an int array), from the events at seq $3 on, by
-- step and attempt.
SELECT t.step, t.name, a.attempt, {{s}}.epoch_us(a.started_at) AS started_us, {{s}}.epoch_us(a.ended_at) AS ended_us,
       a.outcome, coalesce(a.error_type, '') AS error_type, coalesce(a.error_message, '') AS error_message,
       {{s}}.epoch_us(a.retry_at) AS retry_us
FROM {{s}}.attempts a JOIN {{s}}.tasks t ON t.run_id = a.run_id AND t.step = a.step WHERE a.run_id = $1::uuid AND a.step = ANY($2::int[])
UNION ALL  -- the failed attempts of completed tasks, whose rows are gone
SELECT a.step, j.name, a.attempt, {{s}}.epoch_us(a.started_at), {{s}}.epoch_us(a.ended_at), a.outcome,
       coalesce(a.error_type, ''), coalesce(a.error_message, ''), {{s}}.epoch_us(a.retry_at)
FROM {{s}}.attempts a JOIN {{s}}.journal j ON j.run_id = a.run_id AND j.kind = 'activity_completed' AND j.step = a.step
WHERE a.run_id = $1::uuid AND a.step = ANY($2::int[]) AND j.seq >= $3 AND a.outcome <> 'completed'
  AND NOT EXISTS (SELECT 1 FROM {{s}}.tasks x WHERE x.run_id = a.run_id AND x.step = a.step)  -- (versions before 9 recorded successes too)
UNION ALL  -- the attempt running now
SELECT t.step, t.name, t.attempt, {{s}}.epoch_us(t.attempt_started_at), NULL, t.status, '', '', NULL
FROM {{s}}.tasks t WHERE t.run_id = $1::uuid AND t.step = ANY($2::int[]) AND t.status = 'running'
  AND NOT EXISTS (SELECT 1 FROM {{s}}.attempts x WHERE x.task_id = t.task_id AND x.attempt = t.attempt)
UNION ALL  -- the attempt that succeeded, in the step's completed event (after its scheduled one), not
           -- in the events a fork copied (those attempts were the source's). (A completed event is
           -- always its journal row's first: the rows are read, not their events.)
SELECT j.step, j.name, (j.data->>'attempts')::int, (j.data->>'started_us')::bigint, {{s}}.epoch_us(j.created_at),
       'completed', '', '', NULL
FROM {{s}}.journal j
WHERE j.run_id = $1::uuid AND j.seq >= $3 AND j.kind = 'activity_completed' AND j.step = ANY($2::int[])
  AND NOT EXISTS (SELECT 1 FROM {{s}}.workflows f  -- a fork's copies are written with the run, at its created_at
                  WHERE f.run_id = $1::uuid AND f.forked_from_run IS NOT NULL AND f.created_at = j.created_at)
ORDER BY 1, 3
