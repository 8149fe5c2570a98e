-- Makes the tasks that wait for these idempotency keys ($1, json array of [activity, key hex],
-- just let go of by their holders, whose rows may be gone) claimable at once. $2 tasks channel.
WITH w AS (
  UPDATE {{s}}.tasks q SET available_at = {{now}}
  FROM jsonb_array_elements($1::jsonb) AS h(v)
  WHERE q.status = 'pending' AND q.idempotency_key IS NOT NULL AND q.name = h.v->>0
    AND q.idempotency_key = decode(h.v->>1, 'hex') AND q.available_at > {{now}}
  RETURNING q.task_id)
SELECT (SELECT count(*) FROM w) AS woken, (SELECT count(*) FROM (SELECT pg_notify($2, '') WHERE EXISTS (SELECT 1 FROM w)) n)
