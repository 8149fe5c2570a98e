-- The audit log, newest first: the entries before id $1, at most $2.
SELECT audit_id, {{s}}.epoch_us(at) AS at_us, actor, action, reason, coalesce(workflow_id, '') AS workflow_id,
       coalesce(run_id::text, '') AS run_id, details::text
FROM {{s}}.audit WHERE audit_id < $1 ORDER BY audit_id DESC LIMIT $2
