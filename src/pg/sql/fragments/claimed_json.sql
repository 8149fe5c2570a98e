-- The tasks of run `{{run}}` in CTE `{{from}}` that were leased at once, as a json array.
(SELECT coalesce(jsonb_agg(jsonb_build_array(task_id, step, lease_token)), '[]')::text
   FROM {{from}} WHERE status = 'running' AND run_id = {{run}})
