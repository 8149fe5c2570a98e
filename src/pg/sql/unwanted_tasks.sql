-- Of the tasks $1 (json array of task ids) being run here: those their run no longer wants
-- (cancelled when it ended, or gone with it).
SELECT x.id::bigint AS task_id FROM jsonb_array_elements_text($1::jsonb) AS x(id)
WHERE NOT EXISTS (SELECT 1 FROM {{s}}.tasks t WHERE t.task_id = x.id::bigint AND t.status <> 'cancelled')
