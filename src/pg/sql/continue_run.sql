-- The run after run $1, which commit_replay (in this transaction) has just ended as continued:
-- run $2 of the same id, the latest now, with input $3 and the rest of how $1 was started (its
-- parent, depth, schedule). It takes over the messages $1 never received, renumbered in send
-- order (read now, with $1's row locked: every send that committed before is here, and every
-- later one finds $2), and $1's published events. $4 workflows channel. $2 keeps $1's place in its
-- queue (admitted or not) and its deduplication key: one ends as the other starts, in this
-- transaction.
WITH o AS (SELECT * FROM {{s}}.workflows WHERE run_id = $1::uuid AND status = 'continued'),
m AS (
  SELECT seq, row_number() OVER (ORDER BY seq) AS rn FROM {{s}}.messages
  WHERE run_id = $1::uuid AND received_step IS NULL),
nw AS (
  INSERT INTO {{s}}.workflows (workflow_id, run_id, name, status, input, next_seq, runnable, started_by, origin,
                             parent_run_id, parent_step, parent_close, continued_from, messages_sent, app_version,
                             queue, concurrency_key, priority, queued, deduplication_key)
  SELECT o.workflow_id, $2::uuid, o.name, 'running', $3::jsonb, 1, NOT o.queued, 'continued', o.origin, o.parent_run_id,
         o.parent_step, o.parent_close, o.run_id, (SELECT count(*) FROM m), o.app_version, o.queue,
         o.concurrency_key, o.priority, o.queued, o.deduplication_key
  FROM o RETURNING run_id),
e AS (
  INSERT INTO {{s}}.journal (run_id, seq, kind, data)
  SELECT nw.run_id, 0, 'workflow_started',
         (j.data - 'input') || jsonb_build_object('input', $3::jsonb, 'continued_from', $1::text)
  FROM nw, {{s}}.journal j WHERE j.run_id = $1::uuid AND j.seq = 0),
mv AS (
  UPDATE {{s}}.messages x SET run_id = nw.run_id, seq = m.rn
  FROM nw, m WHERE x.run_id = $1::uuid AND x.seq = m.seq),
ev AS (
  INSERT INTO {{s}}.events (run_id, key, value, step, set_at)
  SELECT nw.run_id, v.key, v.value, -1, v.set_at FROM nw, {{s}}.events v WHERE v.run_id = $1::uuid),
n AS (SELECT pg_notify($4, '') FROM nw)
SELECT (SELECT count(*) FROM nw) AS inserted, (SELECT count(*) FROM n) AS notified
