-- Inserts the new tasks (json array `{{tasks}}`) of each workflow in CTE `{{from}}`. Tasks marked
-- "claim" are leased at once to owner `{{owner}}` with claim token `{{token}}` and their own
-- "lease_token" (run at once by this engine); those marked "dropped" (their run ended without
-- awaiting them) are written cancelled; the others wait, pending, for any dispatcher. A task on a
-- named queue (its options name one) carries its priority and its call's concurrency key, else
-- its run's.
  INSERT INTO {{s}}.tasks (run_id, workflow_id, step, name, input, options, idempotency_key, status, available_at,
                         attempt, lease_token, lease_owner, claim_token, attempt_started_at, first_started_at,
                         lease_until, queue, concurrency_key, priority)
  SELECT f.run_id, f.workflow_id, (y.v->>'step')::int, y.v->>'name', y.v->'input', y.v->'options',
         decode(y.v->'options'->>'idempotency_key_hex', 'hex'),
         CASE WHEN c.claim THEN 'running' WHEN (y.v->>'dropped')::boolean THEN 'cancelled' ELSE 'pending' END,
         {{now}}, CASE WHEN c.claim THEN 1 ELSE 0 END, CASE WHEN c.claim THEN (y.v->>'lease_token')::bigint END,
         CASE WHEN c.claim THEN {{owner}} END, CASE WHEN c.claim THEN {{token}} END, CASE WHEN c.claim THEN {{now}} END,
         CASE WHEN c.claim THEN {{now}} END,
         CASE WHEN c.claim THEN {{now}} + (coalesce((y.v->'options'->>'timeout_ms')::bigint, {{default_timeout_ms}}) + {{margin}}::bigint) * interval '1 millisecond' END,
         coalesce(y.v->'options'->>'queue', 'default'),
         CASE WHEN y.v->'options' ? 'concurrency_key' THEN y.v->'options'->>'concurrency_key'
              WHEN y.v->'options' ? 'queue'
              THEN coalesce((SELECT r.concurrency_key FROM {{s}}.workflows r WHERE r.run_id = f.run_id), '') ELSE '' END,
         coalesce((y.v->'options'->>'priority')::int, 0)
  FROM {{from}} f, jsonb_array_elements({{tasks}}) AS y(v),
       LATERAL (SELECT coalesce((y.v->>'claim')::boolean, false) AS claim) AS c
  RETURNING run_id, task_id, step, lease_token, status
