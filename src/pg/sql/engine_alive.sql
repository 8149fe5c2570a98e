-- Engine $1 (its owner name) of instance $2 and app version $3, with $4 activity slots and $5
-- runners, is alive for $6 ms more; $7: it is starting (a pid reused after a crash starts anew).
-- Rows of engines that stopped saying so an hour ago go.
WITH gone AS (DELETE FROM {{s}}.engines WHERE expires_at < statement_timestamp() - interval '1 hour')
INSERT INTO {{s}}.engines (owner, instance, app_version, activity_capacity, workflow_capacity, expires_at)
VALUES ($1, $2, nullif($3, ''), $4, $5, statement_timestamp() + $6::bigint * interval '1 millisecond')
ON CONFLICT (owner) DO UPDATE
SET instance = EXCLUDED.instance, app_version = EXCLUDED.app_version, activity_capacity = EXCLUDED.activity_capacity,
    workflow_capacity = EXCLUDED.workflow_capacity, seen_at = statement_timestamp(), expires_at = EXCLUDED.expires_at,
    started_at = CASE WHEN $7 THEN statement_timestamp() ELSE {{s}}.engines.started_at END
