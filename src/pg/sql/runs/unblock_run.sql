-- Unblocks running run $1 (blocked by a divergence or a missing key) and makes it runnable; returns
-- its id and what blocked it (no row when it was not blocked, or not running).
WITH o AS (SELECT run_id, blocked FROM {{s}}.workflows WHERE run_id = $1::uuid FOR UPDATE)
UPDATE {{s}}.workflows w
SET blocked_at = NULL, blocked = NULL, runnable = true,
    runnable_since = CASE WHEN w.runnable THEN w.runnable_since ELSE now() END, updated_at = now()
FROM o WHERE w.run_id = o.run_id AND (w.status = 'running') IS TRUE AND w.blocked_at IS NOT NULL
RETURNING w.workflow_id, o.blocked::text AS blocked
