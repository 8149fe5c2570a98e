-- Adds $2 to the `runs` counted by audit entry $1 (a prune's, written by its first batch). One row
-- when the entry exists.
UPDATE {{s}}.audit SET details = jsonb_set(details, '{runs}', to_jsonb((details->>'runs')::bigint + $2))
WHERE audit_id = $1 RETURNING 1
