-- Leases the tasks of CTE `c` (task_id, run_id, step, `was` their status as read, `since`) to
-- owner {{owner}} with claim token {{token}}, lease tokens from {{first_token}} on, each for its
-- timeout plus {{margin}} ms: CTE `u` returns them claimed. A task whose status changed since `c`
-- read it is left alone.
n AS (SELECT task_id, row_number() OVER () - 1 AS rn FROM c),
u AS (
  UPDATE {{s}}.tasks t
  SET status = 'running', attempt = t.attempt + 1, lease_token = {{first_token}}::bigint + n.rn,
      lease_owner = {{owner}}, claim_token = {{token}}, attempt_started_at = {{now}},
      first_started_at = coalesce(t.first_started_at, {{now}}),
      lease_until = {{now}} + (coalesce((t.options->>'timeout_ms')::bigint, {{default_timeout_ms}}) + {{margin}}::bigint) * interval '1 millisecond',
      updated_at = statement_timestamp()
  FROM c JOIN n USING (task_id) WHERE t.run_id = c.run_id AND t.step = c.step AND t.status = c.was
  RETURNING t.task_id, t.run_id::text, t.workflow_id, t.step, t.name, t.input::text, t.options::text, t.attempt,
            t.attempt_base, t.lease_token, c.was,
            t.heartbeat::text, {{s}}.epoch_us(t.attempt_started_at) AS claimed_at_us,
            {{s}}.epoch_us(t.first_started_at) AS first_started_us,
            CASE WHEN c.was = 'running' THEN {{s}}.epoch_us(c.since) END AS lease_lost_us, {{async_commit}})
