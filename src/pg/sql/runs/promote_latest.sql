-- The newest remaining run of each id of $1 (json array) becomes its latest, its latest run having
-- been deleted. `skipped`: the ids whose chosen run a concurrent delete took (the next round, with
-- a newer snapshot, takes the next newest).
WITH c AS (SELECT DISTINCT ON (workflow_id) workflow_id, run_id FROM {{s}}.workflows  -- by workflows_by_id
           WHERE workflow_id COLLATE "C" IN (SELECT jsonb_array_elements_text($1::jsonb))
           ORDER BY workflow_id, created_at DESC),
u AS (UPDATE {{s}}.workflows w SET latest = true FROM c WHERE w.run_id = c.run_id RETURNING w.workflow_id)
SELECT coalesce((SELECT jsonb_agg(c.workflow_id) FROM c WHERE c.workflow_id NOT IN (SELECT workflow_id FROM u)),
                '[]')::text AS skipped
