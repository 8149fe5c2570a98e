-- Cancels the running runs of CTE `{{from}}` (a run_id column): each journals workflow_cancelled
-- with data `{{data}}` and drops its tasks; `{{channel}}` is notified when any was cancelled. CTEs w,
-- e, t and n: the statement's SELECT counts w (workflow_id, run_id of each cancelled run).
w AS (
  UPDATE {{s}}.workflows o
  SET status = 'cancelled', runnable = false, next_seq = o.next_seq + 1, replay_lag = o.replay_lag + 1, lease_token = NULL,
      lease_owner = NULL, lease_until = NULL, updated_at = statement_timestamp(), ended_at = statement_timestamp()
  FROM {{from}} f WHERE o.run_id = f.run_id AND (o.status = 'running') IS TRUE
  RETURNING o.workflow_id, o.next_seq - 1 AS seq, o.run_id),
e AS (
  INSERT INTO {{s}}.journal (run_id, seq, kind, data) SELECT run_id, seq, 'workflow_cancelled', {{data}} FROM w),
t AS (
  UPDATE {{s}}.tasks k SET status = 'cancelled', updated_at = statement_timestamp()
  FROM w WHERE k.run_id = w.run_id AND k.status IN ('pending', 'running')),
n AS (SELECT pg_notify({{channel}}, '') WHERE EXISTS (SELECT 1 FROM w))
