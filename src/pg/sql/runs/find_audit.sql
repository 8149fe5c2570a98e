-- The details of the audit entry of action $1 (no row when that action wrote none).
SELECT details::text FROM {{s}}.audit WHERE details->>'action_id' = $1
