-- Whether any run ended before $1 (us): one row, or none.
SELECT 1 FROM {{s}}.workflows WHERE {{due_runs}} LIMIT 1
