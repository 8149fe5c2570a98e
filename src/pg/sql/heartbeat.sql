-- Extends a running attempt's lease, and the hold of the idempotency key it locked, and keeps
-- its latest details ('' keeps the previous ones). Never earlier: a heartbeat whose clock was
-- read before a test's time skip (which moved the lease with the clock) keeps the moved lease.
-- $1 run id, $2 lease token, $3 lease ms (timeout + margin), $4 details json or '', $5 step
WITH h AS (
  UPDATE {{s}}.tasks
  SET lease_until = greatest(lease_until, {{now}} + $3::bigint * interval '1 millisecond'),
      heartbeat = coalesce(nullif($4, '')::jsonb, heartbeat), updated_at = statement_timestamp()
  WHERE run_id = $1::uuid AND step = $5 AND lease_token = $2 AND status = 'running' AND lease_until >= {{now}}
  RETURNING name, idempotency_key, lease_until),
l AS (
  UPDATE {{s}}.idempotency_locks o SET held_until = h.lease_until
  FROM h WHERE h.idempotency_key IS NOT NULL AND o.activity = h.name AND o.key = h.idempotency_key
    AND o.lease_token = $2 AND NOT o.outlives_task)
SELECT 1 FROM h
