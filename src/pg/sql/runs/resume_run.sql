-- Runs failed run $1 again, when it is its id's latest and its journal is still $2 events long:
-- running, runnable, unleased; returns its id and the seq of the workflow_resumed event to write.
-- On a named queue it is queued again: its place there went when it failed. It keeps its
-- deduplication key unless another running run took it meanwhile.
UPDATE {{s}}.workflows
SET status = 'running', result = NULL, error_type = NULL, error_message = NULL, ended_at = NULL,
    runnable = queue = 'default',
    runnable_since = now(), wake_at = NULL, next_seq = next_seq + 1, replay_lag = replay_lag + 1, lease_token = NULL,
    lease_owner = NULL,
    lease_until = NULL, updated_at = now(), queued = queue <> 'default',
    deduplication_key = CASE WHEN EXISTS (
      SELECT 1 FROM {{s}}.workflows o WHERE o.queue = workflows.queue AND o.deduplication_key = workflows.deduplication_key
        AND o.status = 'running') THEN NULL ELSE deduplication_key END
WHERE run_id = $1::uuid AND status = 'failed' AND latest AND next_seq = $2
RETURNING workflow_id, next_seq - 1 AS seq
