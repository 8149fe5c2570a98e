-- An operator action's audit entry: $1 actor, $2 action, $3 reason, $4 workflow id ('' none),
-- $5 run id ('' none), $6 details (json). Returns its id.
INSERT INTO {{s}}.audit (actor, action, reason, workflow_id, run_id, details)
VALUES ($1, $2, $3, nullif($4, ''), nullif($5, '')::uuid, $6::jsonb) RETURNING audit_id
