-- Run $1's workflow_resumed event at seq $2, data $3.
INSERT INTO {{s}}.journal (run_id, seq, kind, data) VALUES ($1::uuid, $2, 'workflow_resumed', $3::jsonb)
