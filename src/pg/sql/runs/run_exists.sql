-- Whether run $1 exists (one row) or not (none).
SELECT 1 FROM {{s}}.workflows WHERE run_id = $1::uuid
