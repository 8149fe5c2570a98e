-- $1 names (json array), $2 limit, $3 owner, $4 lease margin ms, $5 claim token, $6 first of $2
-- lease tokens, $7 the queues served (json array). The default queue's tasks, when it is served: a
-- pending one, or a running one whose lease expired (claimable again: its lost attempt is
-- recorded). A named queue's go through claim_queued_tasks.sql. Oldest first, searched per
-- activity name, so other activities' backlogs are never walked.
WITH c AS (
  SELECT * FROM (
    SELECT p.* FROM jsonb_array_elements_text($1::jsonb) AS n(name), LATERAL (
      SELECT task_id, run_id, step, status AS was, attempt AS old_attempt, attempt_started_at AS old_started,
             available_at AS since
      FROM {{s}}.tasks WHERE {{pending_task}}
      ORDER BY available_at LIMIT $2 FOR UPDATE SKIP LOCKED) AS p
    WHERE $7::jsonb ? 'default'
    UNION ALL
    SELECT x.* FROM jsonb_array_elements_text($1::jsonb) AS n(name), LATERAL (
      SELECT task_id, run_id, step, status, attempt, attempt_started_at, lease_until
      FROM {{s}}.tasks WHERE {{expired_task}}
      ORDER BY lease_until LIMIT $2 FOR UPDATE SKIP LOCKED) AS x
    WHERE $7::jsonb ? 'default') AS waiting
  ORDER BY since LIMIT $2),
{{lease_claimed}},
{{record_lost_attempts}}
SELECT * FROM u
