-- A completed activity's task row goes in the statement that journals its outcome: the
-- journal says everything it did (its scheduled event carries the input and options, its
-- completed event the attempt's start), and an update of the row, which leaves its page with
-- new entries in every index, was about a fifth of a step's WAL (docs/benchmarks.md). Failed
-- and dropped tasks stay (a resume runs them again). Attempts are found by run, as their task
-- may be gone. Journal rows no longer repeat the workflow id (their run has it). Engines of
-- earlier versions must be stopped before this runs: they read options in full and write
-- attempts without their run.

ALTER TABLE {{s}}.journal ALTER COLUMN workflow_id DROP NOT NULL;
ALTER TABLE {{s}}.attempts ADD COLUMN run_id uuid, ADD COLUMN step integer;
UPDATE {{s}}.attempts a SET run_id = t.run_id, step = t.step FROM {{s}}.tasks t WHERE t.task_id = a.task_id;
DELETE FROM {{s}}.attempts WHERE run_id IS NULL;  -- of no task: no reader could reach them
ALTER TABLE {{s}}.attempts ALTER COLUMN run_id SET NOT NULL, ALTER COLUMN step SET NOT NULL;
CREATE INDEX attempts_of_run ON {{s}}.attempts (run_id, step);
UPDATE {{s}}.journal j SET data = j.data || jsonb_build_object('input', t.input, 'options', t.options)
FROM {{s}}.tasks t
WHERE j.kind = 'activity_scheduled' AND t.run_id = j.run_id AND t.step = j.step AND NOT j.data ? 'input';
UPDATE {{s}}.journal j SET data = j.data || jsonb_build_object('started_us', {{s}}.epoch_us(t.attempt_started_at))
FROM {{s}}.tasks t
WHERE j.kind = 'activity_completed' AND t.run_id = j.run_id AND t.step = j.step AND t.status = 'completed'
  AND t.attempt_started_at IS NOT NULL;
DELETE FROM {{s}}.tasks WHERE status = 'completed';
