-- The latest run of id $1 unless the id has one already (retire_run first to replace it).
-- $1 id, $2 run id, $3 name, $4 input, $5 channel, $6 more data for the started event,
-- $7 owner to lease the new run to at once ('' for none: any runner claims it), $8 lease ms,
-- $9 its lease token, $10 started by (call, schedule, trigger), $11 the schedule or trigger ('' none),
-- $12 the starting engine's app version ('' none), $13 its queue, $14 its concurrency key ('' none),
-- $15 its priority, $16 its deduplication key, $17 its debounce key ('' none), admitted no sooner
-- than $18 ms from now. A run on a named queue starts queued (never leased: the owner must be ''),
-- and waits for its admission (admit_queued.sql), not runnable: an engine of a build before
-- queues, in a fleet being upgraded, claims runnable runs without looking at `queued`. Nothing goes in when the id has a latest run, or
-- a running run holds the deduplication key, or a queued run the debounce key (debounce_into.sql
-- first).
-- Its first replay, decided by owner $7 before the start (FirstReplay), goes in with it: $19 its
-- events (json array, '[]' for none: the run is leased to $7, or left to any runner), the run's
-- status after them $20, result $21 ('' none), error type $22 and message $23, wake_at us $24 (-1: none),
-- its tasks $25 (json array, those marked "claim" leased at once to $7 with claim token $27 and
-- lease margin $26 ms), the tasks channel $28 and the ended channel $29. A replayed run holds no
-- lease and is not runnable: it waits for its tasks, its timer, or nothing (it ended).
WITH w AS (
  INSERT INTO {{s}}.workflows (workflow_id, run_id, name, status, input, next_seq, runnable, lease_token, lease_owner,
                             lease_until, started_by, origin, app_version, queue, concurrency_key, priority,
                             queued, deduplication_key, debounce_key, admit_after, result, error_type, error_message,
                             wake_at, ended_at, replay_lag)
  SELECT $1, $2::uuid, $3, $20, $4::jsonb, 1 + r.n, $13 = 'default' AND NOT r.replayed,
         CASE WHEN $7 <> '' AND NOT r.replayed THEN $9::bigint END, CASE WHEN NOT r.replayed THEN nullif($7, '') END,
         CASE WHEN $7 <> '' AND NOT r.replayed THEN {{now}} + $8::bigint * interval '1 millisecond' END, $10,
         nullif($11, ''), nullif($12, ''), $13, $14, $15::int, $13 <> 'default', nullif($16, ''), nullif($17, ''),
         CASE WHEN $17 <> '' THEN {{now}} + $18::bigint * interval '1 millisecond' END, nullif($21, '')::jsonb, nullif($22, ''),
         nullif($23, ''), {{s}}.from_us(nullif($24::bigint, -1)), CASE WHEN $20 <> 'running' THEN statement_timestamp() END,
         CASE WHEN r.replayed THEN r.n ELSE 1 END  -- the events no replay has seen: its replay's, or its start
  FROM (SELECT jsonb_array_length($19::jsonb) AS n, jsonb_array_length($19::jsonb) > 0 AS replayed) AS r
  ON CONFLICT DO NOTHING
  RETURNING workflow_id, run_id, lease_token, runnable, queued, status),
e AS (
  INSERT INTO {{s}}.journal (run_id, seq, kind, data)
  SELECT run_id, 0, 'workflow_started', jsonb_build_object('input', $4::jsonb) || $6::jsonb FROM w),
fe AS (
  INSERT INTO {{s}}.journal (run_id, seq, kind, step, name, data, more)
  SELECT w.run_id, 1, x.v->>'kind', (x.v->>'step')::int, x.v->>'name', coalesce(x.v->'data', '{}'),
         {{more_of_start}}
  FROM w, LATERAL (SELECT $19::jsonb->0 AS v) AS x WHERE x.v IS NOT NULL),
t AS ({{insert_tasks_of_start}}),
n AS (SELECT pg_notify($5, '') FROM w WHERE lease_token IS NULL AND (runnable OR queued)),  -- not a replayed run
tn AS (SELECT pg_notify($28, '') WHERE EXISTS (SELECT 1 FROM t WHERE status = 'pending')),
d AS (SELECT pg_notify($29, run_id::text) FROM w WHERE status <> 'running')
SELECT (SELECT count(*) FROM w) AS inserted,
       (SELECT count(*) FROM n) + (SELECT count(*) FROM tn) + (SELECT count(*) FROM d) AS notified,
       (SELECT lease_token FROM w) AS lease_token, {{claimed_json_of_start}} AS claimed,
       {{s}}.epoch_us({{now}}) AS now_us
