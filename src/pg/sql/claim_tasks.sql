-- $1 names (json array), $2 limit, $3 owner, $4 lease margin ms, $5 claim token, $6 first of $2
-- lease tokens. A running task whose lease expired is claimable again; its lost attempt is recorded.
-- Oldest first, searched per activity name, so other activities' backlogs are never walked.
WITH c AS (
  SELECT * FROM (
    SELECT p.* FROM jsonb_array_elements_text($1::jsonb) AS n(name), LATERAL (
      SELECT task_id, run_id, step, status AS was, attempt AS old_attempt, attempt_started_at AS old_started,
             available_at AS since
      FROM {{s}}.tasks WHERE {{pending_task}}
      ORDER BY available_at LIMIT $2 FOR UPDATE SKIP LOCKED) AS p
    UNION ALL
    SELECT x.* FROM jsonb_array_elements_text($1::jsonb) AS n(name), LATERAL (
      SELECT task_id, run_id, step, status, attempt, attempt_started_at, lease_until
      FROM {{s}}.tasks WHERE {{expired_task}}
      ORDER BY lease_until LIMIT $2 FOR UPDATE SKIP LOCKED) AS x) AS waiting
  ORDER BY since LIMIT $2),
n AS (SELECT task_id, row_number() OVER () - 1 AS rn FROM c),
u AS (
  UPDATE {{s}}.tasks t
  SET status = 'running', attempt = t.attempt + 1, lease_token = $6::bigint + n.rn,
      lease_owner = $3, claim_token = $5, attempt_started_at = {{now}},
      first_started_at = coalesce(t.first_started_at, {{now}}),
      lease_until = {{now}} + (coalesce((t.options->>'timeout_ms')::bigint, {{default_timeout_ms}}) + $4::bigint) * interval '1 millisecond',
      updated_at = statement_timestamp()
  FROM c JOIN n USING (task_id) WHERE t.run_id = c.run_id AND t.step = c.step
  RETURNING t.task_id, t.run_id::text, t.workflow_id, t.step, t.name, t.input::text, t.options::text, t.attempt,
            t.attempt_base, t.lease_token, c.was,
            t.heartbeat::text, {{s}}.epoch_us(t.attempt_started_at) AS claimed_at_us,
            {{s}}.epoch_us(t.first_started_at) AS first_started_us,
            CASE WHEN c.was = 'running' THEN {{s}}.epoch_us(c.since) END AS lease_lost_us, {{async_commit}}),
x AS (
  INSERT INTO {{s}}.attempts (task_id, run_id, step, attempt, started_at, ended_at, outcome, error_type, error_message)
  SELECT task_id, run_id, step, old_attempt, old_started, {{now}}, 'lease_expired', 'durable::LeaseExpired',
         'the worker running this attempt stopped renewing its lease (crashed, hung or cut off)'
  FROM c WHERE was = 'running'
  ON CONFLICT DO NOTHING)
SELECT * FROM u
