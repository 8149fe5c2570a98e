-- The latest value run $1 published under key $2 (no row when none), and the run's status.
SELECT w.status, e.value::text FROM {{s}}.workflows w LEFT JOIN {{s}}.events e ON e.run_id = w.run_id AND e.key = $2
WHERE w.run_id = $1::uuid
