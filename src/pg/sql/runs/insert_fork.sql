-- Fork run $2 of id $1 (workflow $3, input $4), its journal the events $5 (json array) copied from
-- run $6 up to step $7. No row when the id has a latest run. The fork goes on $6's queue, under its
-- key and priority: queued for admission on a named queue, like any new run there.
INSERT INTO {{s}}.workflows (workflow_id, run_id, name, status, input, next_seq, replay_lag, runnable, started_by,
                           forked_from_run, forked_from_step, created_at, queue, concurrency_key, priority, queued)
SELECT $1, $2::uuid, $3, 'running', $4::jsonb, jsonb_array_length($5::jsonb), jsonb_array_length($5::jsonb),
       f.queue = 'default',
       'fork', $6::uuid, $7, now(), f.queue, f.concurrency_key, f.priority, f.queue <> 'default'
FROM {{s}}.workflows f WHERE f.run_id = $6::uuid
ON CONFLICT (workflow_id) WHERE latest DO NOTHING
RETURNING 1
