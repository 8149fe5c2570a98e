-- The latest run of each child id of $1 (json array): no row for an id without one.
SELECT w.workflow_id, w.run_id::text, w.status
FROM jsonb_array_elements_text($1::jsonb) AS x(id) JOIN {{s}}.workflows w ON w.workflow_id = x.id AND w.latest
