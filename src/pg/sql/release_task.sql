-- Hands a running task back without counting the attempt, claimable again after $3 ms
-- (graceful shutdown; a task waiting for another holder of its idempotency key).
-- $1 run id, $2 lease token, $3 delay ms, $4 step
UPDATE {{s}}.tasks
SET status = 'pending', attempt = attempt - 1, available_at = {{now}} + $3::bigint * interval '1 millisecond',
    lease_token = NULL,
    lease_owner = NULL, lease_until = NULL, updated_at = statement_timestamp()
WHERE run_id = $1::uuid AND step = $4 AND lease_token = $2 AND status = 'running'
