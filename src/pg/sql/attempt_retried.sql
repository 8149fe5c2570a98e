-- Whether attempt $2 of task $1 failed and had its retry scheduled (by retry_task).
SELECT 1 FROM {{s}}.attempts WHERE task_id = $1 AND attempt = $2 AND outcome = 'failed' AND retry_at IS NOT NULL
