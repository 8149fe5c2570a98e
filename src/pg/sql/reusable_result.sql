-- A committed result for the task's (activity, key), and whether it came from the same input
-- (as md5 fingerprints tell; a fingerprint the engine computed under a codec, it compares itself).
-- $1 run id, $2 step
SELECT r.result::text, r.input_fingerprint = md5(t.input::text) AS same_input, r.input_fingerprint, r.workflow_id
FROM {{s}}.tasks t JOIN {{s}}.idempotent_results r ON r.activity = t.name AND r.key = t.idempotency_key
WHERE t.run_id = $1::uuid AND t.step = $2
