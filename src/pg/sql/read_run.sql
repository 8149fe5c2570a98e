-- Run $1.
SELECT workflow_id, run_id::text, name, status, result::text, coalesce(error_type, '') AS error_type,
       coalesce(error_message, '') AS error_message
FROM {{s}}.workflows WHERE run_id = $1::uuid
