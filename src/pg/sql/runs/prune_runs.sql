-- Deletes the rows of the oldest $2 runs that ended before $1 (us), each checked again as its row
-- is reached (a run resumed meanwhile is not due any more). No lock is taken before (a row lock
-- is a WAL record per run); a batch a concurrent prune took is waited for, then found gone.
DELETE FROM {{s}}.workflows
WHERE run_id IN (SELECT run_id FROM {{s}}.workflows WHERE {{due_runs}} ORDER BY ended_at LIMIT $2)
  AND status <> 'running' AND {{due_runs}}
RETURNING run_id::text, workflow_id, latest
