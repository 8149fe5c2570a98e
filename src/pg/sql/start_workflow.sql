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
WITH w AS (
  INSERT INTO {{s}}.workflows (workflow_id, run_id, name, status, input, next_seq, runnable, lease_token, lease_owner,
                             lease_until, started_by, origin, app_version, queue, concurrency_key, priority,
                             queued, deduplication_key, debounce_key, admit_after)
  VALUES ($1, $2::uuid, $3, 'running', $4::jsonb, 1, $13 = 'default', CASE WHEN $7 <> '' THEN $9::bigint END,
          nullif($7, ''), CASE WHEN $7 <> '' THEN {{now}} + $8::bigint * interval '1 millisecond' END, $10,
          nullif($11, ''), nullif($12, ''), $13, $14, $15::int, $13 <> 'default', nullif($16, ''), nullif($17, ''),
          CASE WHEN $17 <> '' THEN {{now}} + $18::bigint * interval '1 millisecond' END)
  ON CONFLICT DO NOTHING
  RETURNING workflow_id, run_id, lease_token),
e AS (
  INSERT INTO {{s}}.journal (run_id, seq, kind, data)
  SELECT run_id, 0, 'workflow_started', jsonb_build_object('input', $4::jsonb) || $6::jsonb FROM w),
n AS (SELECT pg_notify($5, '') FROM w WHERE lease_token IS NULL)
SELECT (SELECT count(*) FROM w) AS inserted, (SELECT count(*) FROM n) AS notified,
       (SELECT lease_token FROM w) AS lease_token, {{s}}.epoch_us({{now}}) AS now_us
