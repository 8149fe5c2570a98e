-- How long the oldest claimable task of these activities ($1, json array of names) on the queues
-- served ($2, json array) has waited, on the default queue: pending since it became available, or
-- running since its lease ran out. One index probe per name.
SELECT coalesce(extract(epoch FROM {{now}} - min(since)), 0)::float8 AS age
FROM jsonb_array_elements_text($2::jsonb) AS q(queue), jsonb_array_elements_text($1::jsonb) AS n(name),
LATERAL (
  SELECT (SELECT available_at FROM {{s}}.tasks WHERE {{pending_task}} AND q.queue = 'default'
          ORDER BY available_at LIMIT 1) AS since
  UNION ALL
  SELECT (SELECT lease_until FROM {{s}}.tasks WHERE {{expired_task}} AND q.queue = 'default'
          ORDER BY lease_until LIMIT 1)) AS oldest
