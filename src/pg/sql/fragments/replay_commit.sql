-- What a replay decided, committed (commit_replay.sql says what each parameter is): the run's
-- row, its events and its tasks, then `extras`: the CTEs for what only some replays do (messages
-- received, events published, children started, tasks dropped, cancels delivered), which end with
-- `extras_n` (notified) and `extras_refused` (refused: a child's id was taken).
WITH w AS (
  UPDATE {{s}}.workflows
  SET next_seq = next_seq + jsonb_array_length($3::jsonb), status = $4, result = $5::jsonb,
      error_type = nullif($6, ''), error_message = nullif($7, ''),
      runnable = {{replay_outdated}}, runnable_since = CASE WHEN {{replay_outdated}} THEN statement_timestamp() ELSE runnable_since END,
      wake_at = {{s}}.from_us(nullif($9::bigint, -1)),
      lease_token = NULL, lease_owner = NULL, lease_until = NULL, updated_at = statement_timestamp(),
      ended_at = CASE WHEN $4 <> 'running' THEN statement_timestamp() END, latest = latest AND $4 <> 'continued',
      app_version = nullif($24, ''), blocked_at = NULL, blocked = NULL,
      replay_lag = next_seq + jsonb_array_length($3::jsonb) - $8
  WHERE run_id = $1::uuid AND lease_token = $2 AND (status = 'running') IS TRUE
  RETURNING workflow_id, next_seq - jsonb_array_length($3::jsonb) AS base, run_id),
c AS ({{drop_unawaited}}),
e AS (
  INSERT INTO {{s}}.journal (run_id, seq, kind, step, name, data, more)
  SELECT w.run_id, w.base, x.v->>'kind', (x.v->>'step')::int, x.v->>'name', coalesce(x.v->'data', '{}'),
         {{more_of_replay}}
  FROM w, LATERAL (SELECT $3::jsonb->0 AS v) AS x WHERE x.v IS NOT NULL),
t AS ({{insert_tasks}}),
n AS (SELECT pg_notify($11, '') FROM w WHERE EXISTS (SELECT 1 FROM t WHERE status = 'pending')),
d AS (SELECT pg_notify($12, w.run_id::text) FROM w WHERE $4 <> 'running'),  -- result() waiters of this run wake
{{extras}}
SELECT (SELECT count(*) FROM w) AS committed, (SELECT base FROM w) AS base, {{claimed_json}} AS claimed,
       {{s}}.epoch_us({{now}}) AS now_us,
       (SELECT count(*) FROM n) + (SELECT count(*) FROM d) + (SELECT notified FROM extras_n) AS notified,
       CASE WHEN (SELECT refused FROM extras_refused) OR ($4 = 'continued' AND (SELECT base FROM w) <> $8)
            THEN {{s}}.refuse_commit('a child workflow id was taken, or the journal grew, after the replay read them')
       END AS refused
