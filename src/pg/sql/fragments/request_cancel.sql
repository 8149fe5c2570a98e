-- Asks the running runs of CTE `{{from}}` (a run_id column) to cancel, unless they were asked
-- already: each gets a cancel_requested event with reason `{{reason}}` (its code sees it at its
-- next replay) and is made runnable; `{{channel}}` (workflows) is notified. CTEs {{p}}w, {{p}}e and
-- {{p}}n: the statement's SELECT reads {{p}}w (workflow_id, run_id of each run asked) and {{p}}n.
{{p}}w AS (
  UPDATE {{s}}.workflows o
  SET next_seq = o.next_seq + 1, replay_lag = o.replay_lag + 1, cancel_requested_at = statement_timestamp(), runnable = true,
      runnable_since = CASE WHEN o.runnable THEN o.runnable_since ELSE statement_timestamp() END, updated_at = statement_timestamp()
  FROM {{from}} f WHERE o.run_id = f.run_id AND (o.status = 'running') IS TRUE AND o.cancel_requested_at IS NULL
  RETURNING o.workflow_id, o.next_seq - 1 AS seq, o.run_id),
{{p}}e AS (
  INSERT INTO {{s}}.journal (run_id, seq, kind, data)
  SELECT run_id, seq, 'cancel_requested', jsonb_build_object('reason', {{reason}}) FROM {{p}}w),
{{p}}n AS (SELECT pg_notify({{channel}}, '') WHERE EXISTS (SELECT 1 FROM {{p}}w))
