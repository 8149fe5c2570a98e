-- After a fenced write matched nothing: did this very lease already finish the task
-- (an earlier try whose commit we never heard back about), or was it fenced off?
-- $1 run id, $2 lease token, $3 step
SELECT status, coalesce(lease_token = $2, false) AS same_lease FROM {{s}}.tasks WHERE run_id = $1::uuid AND step = $3
