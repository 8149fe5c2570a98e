-- The names of json array {{names}} whose {{kind}} type is not paused (paused_types), as a
-- subquery of one column, `name`.
(SELECT x.name FROM jsonb_array_elements_text({{names}}) AS x(name)
 WHERE NOT EXISTS (SELECT 1 FROM {{s}}.paused_types p WHERE p.kind = '{{kind}}' AND p.name = x.name))
