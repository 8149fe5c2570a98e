-- After a send whose answer was lost: whether message $2 is in the inbox of a run of id $1.
SELECT 1 FROM {{s}}.messages m JOIN {{s}}.workflows w USING (run_id) WHERE w.workflow_id = $1 AND m.message_id = $2::uuid
