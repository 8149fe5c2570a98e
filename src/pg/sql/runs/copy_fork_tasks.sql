-- Fork run $1 (id $2)'s open steps $4 (json array) run again, pending, as their scheduled events
-- in $3 (json array) say (their source tasks may be gone), on the queue their options name with
-- their call's concurrency key, else the fork's.
INSERT INTO {{s}}.tasks (run_id, workflow_id, step, name, input, options, idempotency_key, status, available_at,
                         queue, concurrency_key, priority)
SELECT $1::uuid, $2, (x.v->>'step')::int, x.v->>'name', x.v->'data'->'input', coalesce(x.v->'data'->'options', '{}'),
       decode(x.v->'data'->'options'->>'idempotency_key_hex', 'hex'), 'pending', now(),
       coalesce(x.v->'data'->'options'->>'queue', 'default'),
       CASE WHEN x.v->'data'->'options' ? 'concurrency_key' THEN x.v->'data'->'options'->>'concurrency_key'
            WHEN x.v->'data'->'options' ? 'queue'
            THEN coalesce((SELECT r.concurrency_key FROM {{s}}.workflows r WHERE r.run_id = $1::uuid), '') ELSE '' END,
       coalesce((x.v->'data'->'options'->>'priority')::int, 0)
FROM jsonb_array_elements($3::jsonb) AS x(v)
WHERE x.v->>'kind' = 'activity_scheduled' AND (x.v->>'step')::int IN (SELECT jsonb_array_elements_text($4::jsonb)::int)
