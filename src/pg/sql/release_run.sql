-- Gives back run $1's lease, taken with lease token $2 by a claim that raced a pause of its
-- workflow type (the claim asked for the names not paused as they were just before): the run is
-- claimable again as it was, by the first claim after the resume. Nothing when the lease went.
UPDATE {{s}}.workflows SET lease_owner = NULL, lease_until = NULL, updated_at = statement_timestamp()
WHERE run_id = $1::uuid AND lease_token = $2::bigint AND (status = 'running') IS TRUE
