-- commit_replay's CTEs for what only some replays do: the messages received, the events published,
-- the children started (refused when an id was taken since it was read), the tasks a delivered
-- cancel dropped and the children it asks to cancel. Read by fragments/replay_commit.sql.
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
{{request_own_children}},
extras_n AS (SELECT (SELECT count(*) FROM pn) + (SELECT count(*) FROM chn) + (SELECT count(*) FROM asked_n) AS notified),
extras_refused AS (SELECT (SELECT count(*) FROM ch) < (SELECT count(*) FROM kids) AS refused)
