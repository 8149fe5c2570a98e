-- A start of workflow $3 with debounce key $2 on queue $1 collapses into the queued run of that
-- workflow with that key, if there is one: its admission moves to $4 ms from now, and its input
-- becomes $5 (in the run and in its workflow_started event: its code has not run) unless $6 (the
-- first start's input stays). Returns that run.
WITH w AS (
  UPDATE {{s}}.workflows
  SET admit_after = {{now}} + $4::bigint * interval '1 millisecond', input = CASE WHEN $6 THEN input ELSE $5::jsonb END,
      updated_at = statement_timestamp()
  WHERE queue = $1 AND debounce_key = $2 AND name = $3 AND status = 'running' AND queued
  RETURNING workflow_id, run_id),
j AS (
  UPDATE {{s}}.journal j SET data = jsonb_set(j.data, '{input}', $5::jsonb)
  FROM w WHERE j.run_id = w.run_id AND j.seq = 0 AND NOT $6)
SELECT workflow_id, run_id::text, 'running' AS status FROM w
