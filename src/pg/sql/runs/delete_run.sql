-- Deletes run $1's row unless it is running (fragments/deleted_runs.sql says what follows).
DELETE FROM {{s}}.workflows WHERE run_id = $1::uuid AND status <> 'running'
RETURNING run_id::text, workflow_id, latest
