-- One statement, one implicit transaction: fenced by the workflow lease. $1 run id, $2 lease token,
-- $3 events (json array), $4 status, $5 result, $6 error type, $7 error message,
-- $8 journal length the replay saw, $9 wake_at us (-1: none), $10 tasks (json array),
-- $11 tasks channel, $12 ended channel, $13 owner, $14 lease margin ms, $15 claim token,
-- $16 the run's messages_sent when the replay read its inbox (-1: it did not), $17 the messages
-- it received (json array of [seq, step]), $18 the events it published (json array of
-- [key, value, step], one per key), $19 events channel, $20 the children it starts (json array
-- of NewChild), $21 workflows channel, $22 the steps whose tasks a cancel it delivered drops
-- (json array), $23 whether it delivered a cancel: its running children under the cancel
-- policy are asked too (those busy in a commit of their own are asked when it ends). A child
-- id taken since the replay read it refuses the whole commit (SQLSTATE DUR01, from the final
-- SELECT), and so does a journal grown since, when the run continues as new (status
-- 'continued': what came, a cancel request say, would be lost with the run). Such a run is no
-- longer its id's latest: continue_run inserts the next in the same transaction. $24 the
-- engine's app version ('' none), recorded on the run and its new children; a blocked run is
-- blocked no more.
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
r AS (
  UPDATE {{s}}.messages m SET received_step = (x.v->>1)::int, received_at = statement_timestamp()
  FROM w, jsonb_array_elements($17::jsonb) AS x(v)
  WHERE m.run_id = w.run_id AND m.seq = (x.v->>0)::int AND m.received_step IS NULL),
p AS (
  INSERT INTO {{s}}.events (run_id, key, value, step)
  SELECT w.run_id, x.v->>0, x.v->1, (x.v->>2)::int FROM w, jsonb_array_elements($18::jsonb) AS x(v)
  ON CONFLICT (run_id, key) DO UPDATE SET value = excluded.value, step = excluded.step, set_at = statement_timestamp()
  RETURNING 1),
pn AS (SELECT pg_notify($19, '') WHERE EXISTS (SELECT 1 FROM p)),
n AS (SELECT pg_notify($11, '') FROM w WHERE EXISTS (SELECT 1 FROM t WHERE status = 'pending')),
d AS (SELECT pg_notify($12, w.run_id::text) FROM w WHERE $4 <> 'running'),  -- result() waiters of this run wake
kids AS (SELECT x.v FROM w, jsonb_array_elements($20::jsonb) AS x(v)),
retired AS (
  UPDATE {{s}}.workflows o SET latest = false, updated_at = statement_timestamp()
  FROM kids WHERE o.workflow_id = kids.v->>'workflow_id' AND o.latest AND o.status <> 'running'
    AND kids.v->'replaceable' ? o.status
  RETURNING o.run_id),
ch AS (
  INSERT INTO {{s}}.workflows (workflow_id, run_id, name, status, input, next_seq, runnable, started_by, parent_run_id,
                             parent_step, parent_close, app_version)
  SELECT kids.v->>'workflow_id', (kids.v->>'run_id')::uuid, kids.v->>'name', 'running', kids.v->'input', 1, true,
         'child', $1::uuid, (kids.v->>'step')::int, kids.v->>'parent_close', nullif($24, '')
  FROM kids, (SELECT count(*) FROM retired) AS after_retiring  -- so the ids retired have room first
  ON CONFLICT (workflow_id) WHERE latest DO NOTHING
  RETURNING run_id),
chj AS (
  INSERT INTO {{s}}.journal (run_id, seq, kind, data)
  SELECT ch.run_id, 0, 'workflow_started',
         jsonb_build_object('input', kids.v->'input', 'depth', (kids.v->>'depth')::int, 'parent',
                            jsonb_build_object('workflow_id', w.workflow_id, 'run_id', w.run_id,
                                               'step', (kids.v->>'step')::int))
  FROM w, ch JOIN kids ON (kids.v->>'run_id')::uuid = ch.run_id),
chn AS (SELECT pg_notify($21, '') WHERE EXISTS (SELECT 1 FROM ch)),
dr AS (
  UPDATE {{s}}.tasks k SET status = 'cancelled', updated_at = statement_timestamp()
  FROM w, jsonb_array_elements_text($22::jsonb) AS x(step)
  WHERE k.run_id = w.run_id AND k.step = x.step::int AND k.status IN ('pending', 'running')),
asked AS (
  SELECT c.run_id FROM {{s}}.workflows c, w
  WHERE $23::boolean AND c.parent_run_id = w.run_id AND c.status = 'running' AND c.parent_close = 'cancel'
    AND c.cancel_requested_at IS NULL
  FOR UPDATE OF c SKIP LOCKED),
{{request_own_children}}
SELECT (SELECT count(*) FROM w) AS committed, (SELECT base FROM w) AS base, {{claimed_json}} AS claimed,
       {{s}}.epoch_us({{now}}) AS now_us,
       (SELECT count(*) FROM n) + (SELECT count(*) FROM d) + (SELECT count(*) FROM pn) + (SELECT count(*) FROM chn)
         + (SELECT count(*) FROM asked_n) AS notified,
       CASE WHEN (SELECT count(*) FROM ch) < (SELECT count(*) FROM kids)
              OR ($4 = 'continued' AND (SELECT base FROM w) <> $8)
            THEN {{s}}.refuse_commit('a child workflow id was taken, or the journal grew, after the replay read them')
       END AS refused
