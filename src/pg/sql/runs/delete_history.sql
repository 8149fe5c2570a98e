-- The history of the runs $1 (json array of run ids) whose rows were just deleted: their tasks,
-- attempts, key locks, messages, events and journal. Its snapshot sees everything written before
-- their rows were deleted, and nothing adds to the history of a run whose row is gone.
WITH v AS (SELECT jsonb_array_elements_text($1::jsonb)::uuid AS run_id),
t AS (DELETE FROM {{s}}.tasks WHERE run_id IN (SELECT run_id FROM v) RETURNING task_id),
a AS (DELETE FROM {{s}}.attempts WHERE run_id IN (SELECT run_id FROM v)),
k AS (DELETE FROM {{s}}.idempotency_locks WHERE task_id IN (SELECT task_id FROM t)),
m AS (DELETE FROM {{s}}.messages WHERE run_id IN (SELECT run_id FROM v)),
e AS (DELETE FROM {{s}}.events WHERE run_id IN (SELECT run_id FROM v))
DELETE FROM {{s}}.journal WHERE run_id IN (SELECT run_id FROM v)
