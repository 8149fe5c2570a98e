-- A replay of run $1 under lease $2 diverged from its journal: the run stays running, blocked
-- with the divergence $3 (json: step, journaled, asked, message) by an engine of app version $4,
-- and nothing else is written. It is due again after $5 ms doubled for each time it was blocked
-- since it last made progress (at most 64 times), unless something makes it runnable before;
-- `versions` lists the app versions that blocked it, which wake_blocked leaves alone. Returns
-- how many times it was blocked (1: the first, which is logged).
UPDATE {{s}}.workflows
SET blocked_at = coalesce(blocked_at, statement_timestamp()),
    blocked = $3::jsonb || jsonb_build_object(
      'app_version', $4::text, 'times', coalesce((blocked->>'times')::int, 0) + 1,
      'versions', (coalesce(blocked->'versions', '[]'::jsonb) - $4::text) || to_jsonb($4::text)),
    app_version = nullif($4::text, ''), runnable = false,
    wake_at = {{now}} + $5::bigint * power(2, least(coalesce((blocked->>'times')::int, 0), 6)) * interval '1 millisecond',
    lease_token = NULL, lease_owner = NULL, lease_until = NULL, updated_at = statement_timestamp()
WHERE run_id = $1::uuid AND lease_token = $2 AND (status = 'running') IS TRUE
RETURNING (blocked->>'times')::int AS times
