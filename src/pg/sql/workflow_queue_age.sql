-- The same for runnable workflows of these workflow names ($1, json array) on these queues ($2,
-- json array): claimable since they became runnable (stamped by the server's own clock), or since
-- their timer came due.
SELECT coalesce(extract(epoch FROM max(age)), 0)::float8 AS age
FROM jsonb_array_elements_text($2::jsonb) AS q(queue), jsonb_array_elements_text($1::jsonb) AS n(name),
LATERAL (
  SELECT statement_timestamp() - (SELECT runnable_since FROM {{s}}.workflows WHERE {{runnable_workflow}}
                  ORDER BY runnable_since LIMIT 1) AS age
  UNION ALL
  SELECT {{now}} - (SELECT wake_at FROM {{s}}.workflows WHERE {{waking_workflow}} ORDER BY wake_at LIMIT 1)) AS oldest
