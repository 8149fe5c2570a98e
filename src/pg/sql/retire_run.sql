-- Makes room for a new run under id $1 (which start_workflow then inserts, in the same
-- transaction) when its latest run has ended with a status in $2 (json array): that run stays,
-- with its history, no longer the latest.
UPDATE {{s}}.workflows SET latest = false
WHERE workflow_id = $1 AND latest AND status IN (SELECT jsonb_array_elements_text($2::jsonb))
RETURNING run_id
