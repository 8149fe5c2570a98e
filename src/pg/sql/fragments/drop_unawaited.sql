-- A run that ended drops the tasks it never awaited: pending ones are not run, running ones see
-- cancelled() at their next heartbeat and their outcomes are fenced off. For the runs in CTE
-- `{{from}}` whose new status is `{{status}}`, all but the task `{{except}}` finishing with it.
  UPDATE {{s}}.tasks o SET status = 'cancelled', updated_at = statement_timestamp()
  FROM {{from}} f
  WHERE {{status}} <> 'running' AND o.run_id = f.run_id AND o.status IN ('pending', 'running')
    AND o.task_id IS DISTINCT FROM {{except}}
