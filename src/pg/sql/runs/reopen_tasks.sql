-- Run $1's tasks of steps $2 (json array) wait again, pending, as if never tried.
UPDATE {{s}}.tasks
SET status = 'pending', attempt_base = attempt, available_at = now(), first_started_at = NULL, attempt_started_at = NULL,
    result = NULL, error_type = NULL, error_message = NULL, lease_token = NULL, lease_owner = NULL, claim_token = NULL,
    lease_until = NULL, updated_at = now()
WHERE run_id = $1::uuid AND step IN (SELECT jsonb_array_elements_text($2::jsonb)::int)
