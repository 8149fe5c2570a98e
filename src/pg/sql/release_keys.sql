-- Lets go of the idempotency keys of bodies that returned ($1 as for hold_keys), unless
-- another lease took them over, and makes the tasks waiting for them claimable. $2 tasks channel.
WITH l AS (
  DELETE FROM {{s}}.idempotency_locks o USING jsonb_array_elements($1::jsonb) AS h(v)
  WHERE o.activity = h.v->>0 AND o.key = decode(h.v->>1, 'hex') AND o.lease_token = (h.v->>2)::bigint
  RETURNING o.activity, o.key),
w AS (
  UPDATE {{s}}.tasks q SET available_at = {{now}}
  FROM l
  WHERE q.status = 'pending' AND q.idempotency_key IS NOT NULL AND q.name = l.activity
    AND q.idempotency_key = l.key AND q.available_at > {{now}}
  RETURNING q.task_id)
SELECT (SELECT count(*) FROM l) AS released, (SELECT count(*) FROM w) AS woken,
       (SELECT count(*) FROM (SELECT pg_notify($2, '') WHERE EXISTS (SELECT 1 FROM w)) n) AS notified
