-- The running (queued or admitted) run of queue $1 that holds deduplication key $2, if any.
SELECT workflow_id, run_id::text, status FROM {{s}}.workflows
WHERE queue = $1 AND deduplication_key = $2 AND status = 'running'
