-- Keeps the idempotency keys of bodies that run on after their tasks let go of them held for
-- $2 ms more, whatever their tasks do. $1 json array of [activity, key hex, lease token].
UPDATE {{s}}.idempotency_locks o
SET held_until = greatest(o.held_until, {{now}} + $2::bigint * interval '1 millisecond'), outlives_task = true
FROM jsonb_array_elements($1::jsonb) AS h(v)
WHERE o.activity = h.v->>0 AND o.key = decode(h.v->>1, 'hex') AND o.lease_token = (h.v->>2)::bigint
