-- Records the lost attempts of the tasks of CTE `c` taken over from an expired lease (`was`
-- 'running'; `old_attempt`, `old_started`): the worker running them stopped renewing its lease.
lost AS (
  INSERT INTO {{s}}.attempts (task_id, run_id, step, attempt, started_at, ended_at, outcome, error_type, error_message)
  SELECT task_id, run_id, step, old_attempt, old_started, {{now}}, 'lease_expired', 'durable::LeaseExpired',
         'the worker running this attempt stopped renewing its lease (crashed, hung or cut off)'
  FROM c WHERE was = 'running'
  ON CONFLICT DO NOTHING)
