-- How many running runs of workflow names $1 (json array) are blocked.
SELECT count(*) AS blocked FROM {{s}}.workflows
WHERE status = 'running' AND blocked_at IS NOT NULL AND name IN (SELECT jsonb_array_elements_text($1::jsonb))
