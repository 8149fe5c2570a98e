-- Fork run $1's journal: the events $2 (json array), one row each. The copies are told apart by
-- their time: the run's, this transaction's (now()).
INSERT INTO {{s}}.journal (run_id, seq, kind, step, name, data, created_at)
SELECT $1::uuid, x.ord - 1, x.v->>'kind', (x.v->>'step')::int, x.v->>'name', x.v->'data', now()
FROM jsonb_array_elements($2::jsonb) WITH ORDINALITY AS x(v, ord)
