-- The body of task ($1 run, $2 step) under lease $3 returned after its task was cancelled (its run
-- ended or was cancelled): the place it held on its named queue is free (claim_queued_tasks.sql
-- counts a cancelled task while its lease runs).
UPDATE {{s}}.tasks SET lease_until = NULL, updated_at = statement_timestamp()
WHERE run_id = $1::uuid AND step = $2 AND lease_token = $3 AND status = 'cancelled'
