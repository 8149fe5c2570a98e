-- The events of json array `{{events}}` after its first `{{skip}}`, as a journal row's `more` column
-- (each [kind, step, name, data]; NULL when there are none): committed with the row's first event.
(SELECT jsonb_agg(jsonb_build_array(x.v->'kind', x.v->'step', x.v->'name',
                                      coalesce(x.v->'data', '{}')) ORDER BY x.ord)
   FROM jsonb_array_elements({{events}}) WITH ORDINALITY AS x(v, ord) WHERE x.ord > {{skip}})
