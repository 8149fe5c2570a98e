-- The oldest running run (no row when none runs).
SELECT {{run_summary_columns}} FROM {{s}}.workflows w WHERE w.status = 'running' ORDER BY w.created_at LIMIT 1
