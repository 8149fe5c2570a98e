-- Whether step $2 of run $1 was journaled as completed by its attempt $3 (its task row is gone).
SELECT 1 FROM {{s}}.journal  -- a completed event is its row's first
WHERE run_id = $1::uuid AND kind = 'activity_completed' AND step = $2 AND (data->>'attempts')::int = $3
