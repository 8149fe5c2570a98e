-- A message into the inbox of id $1's latest run, unless that run has one with idempotency
-- key $5 already (then its id is returned and nothing written). $2 topic, $3 payload, $4 message
-- id, $5 idempotency key ('' for none), $6 workflows channel. The run is made runnable, so a
-- replay waiting in receive() sees it; `status` is NULL when the id has no run.
WITH r AS (SELECT run_id, status FROM {{s}}.workflows WHERE workflow_id = $1 AND latest),
k AS (SELECT m.message_id::text AS message_id FROM {{s}}.messages m, r
      WHERE $5 <> '' AND m.run_id = r.run_id AND m.idempotency_key = $5),
w AS (
  UPDATE {{s}}.workflows
  SET messages_sent = messages_sent + 1, runnable = true,
      runnable_since = CASE WHEN runnable THEN runnable_since ELSE statement_timestamp() END
  WHERE workflow_id = $1 AND latest AND (status = 'running') IS TRUE AND NOT EXISTS (SELECT 1 FROM k)
  RETURNING run_id, messages_sent, lease_until),
i AS (
  INSERT INTO {{s}}.messages (run_id, seq, topic, message_id, payload, idempotency_key, sent_at)
  SELECT run_id, messages_sent, $2, $4::uuid, $3::jsonb, nullif($5, ''), {{now}} FROM w RETURNING seq),
n AS (SELECT pg_notify($6, '') FROM w WHERE lease_until IS NULL OR lease_until < {{now}})
SELECT (SELECT status FROM r) AS status, (SELECT message_id FROM k) AS existing_id,
       (SELECT count(*) FROM i) AS sent, (SELECT count(*) FROM n) AS notified
