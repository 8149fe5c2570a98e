-- $1 names (json array), $2 limit, $3 owner, $4 lease margin ms, $5 claim token, $6 first of $2
-- lease tokens, $7 the queues served (json array). Pending tasks of the default queue (when it is
-- served); a running task whose lease expired, on any queue served, is claimable again: its lost
-- attempt is recorded. Oldest first, searched per queue and activity name, so other activities'
-- backlogs are never walked. A paused activity type is not claimed.
WITH c AS (
  SELECT * FROM (
    SELECT p.* FROM {{unpaused_claimed_activities}} AS n, LATERAL (
      SELECT task_id, run_id, step, status AS was, attempt AS old_attempt, attempt_started_at AS old_started,
             available_at AS since
      FROM {{s}}.tasks WHERE {{pending_task}}
      ORDER BY available_at LIMIT $2 FOR UPDATE SKIP LOCKED) AS p
    WHERE $7::jsonb ? 'default'
    UNION ALL
    SELECT x.* FROM jsonb_array_elements_text($7::jsonb) AS q(queue), {{unpaused_claimed_activities}} AS n,
    LATERAL (
      SELECT task_id, run_id, step, status, attempt, attempt_started_at, lease_until
      FROM {{s}}.tasks WHERE {{expired_task}}
      ORDER BY lease_until LIMIT $2 FOR UPDATE SKIP LOCKED) AS x) AS waiting
  ORDER BY since LIMIT $2),
{{lease_claimed}},
x AS (
  INSERT INTO {{s}}.attempts (task_id, run_id, step, attempt, started_at, ended_at, outcome, error_type, error_message)
  SELECT task_id, run_id, step, old_attempt, old_started, {{now}}, 'lease_expired', 'durable::LeaseExpired',
         'the worker running this attempt stopped renewing its lease (crashed, hung or cut off)'
  FROM c WHERE was = 'running'
  ON CONFLICT DO NOTHING)
SELECT * FROM u
