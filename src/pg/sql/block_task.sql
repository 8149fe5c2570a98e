-- Hands back a running task this engine cannot run (its codec lacks the key of its input),
-- fenced by its lease, without counting the attempt, and marks its running run blocked with
-- $3 (json: step, journaled, asked, message) by an engine of app version $4, leaving the run's
-- lease and wake-up alone (no `versions`: wake_blocked is for code, not keys). The task is
-- due again after $5 ms doubled for each time the run was blocked since it last made progress
-- (at most 64 times). $1 run id, $2 lease token, $6 step. Returns how many times the run was
-- blocked (no row: the lease was lost).
WITH r AS (
  SELECT coalesce((SELECT (blocked->>'times')::int FROM {{s}}.workflows WHERE run_id = $1::uuid), 0) AS times),
t AS (
  UPDATE {{s}}.tasks
  SET status = 'pending', attempt = attempt - 1,
      available_at = {{now}} + $5::bigint * power(2, least((SELECT times FROM r), 6)) * interval '1 millisecond',
      lease_token = NULL, lease_owner = NULL, lease_until = NULL, updated_at = statement_timestamp()
  WHERE run_id = $1::uuid AND step = $6 AND lease_token = $2 AND status = 'running'
  RETURNING run_id)
UPDATE {{s}}.workflows w
SET blocked_at = coalesce(w.blocked_at, statement_timestamp()),
    blocked = $3::jsonb || jsonb_build_object('app_version', $4::text, 'times', (SELECT times FROM r) + 1),
    updated_at = statement_timestamp()
FROM t WHERE w.run_id = t.run_id AND (w.status = 'running') IS TRUE
RETURNING (w.blocked->>'times')::int AS times
