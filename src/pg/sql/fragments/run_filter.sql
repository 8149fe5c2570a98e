-- The conditions of a RunFilter on workflows `w`, each left out by a NULL: $1 statuses (a text
-- array), $2 workflow name, $3 id prefix as a LIKE pattern, $4 and $5 created from / until (us),
-- $6 and $7 ended from / until (us), $8 schedule id, $9 trigger, $10 parent run id, $11 app
-- version ('' for runs without one), $12 blocked runs only. The statements using it plan with
-- their values (plan_with_values in run_store.cpp): each NULL test folds away, and the prefix
-- becomes an index range, as when the values were written into the text.
($1::text[] IS NULL OR w.status = ANY($1::text[]))
  AND ($2::text IS NULL OR w.name = $2::text)
  AND ($3::text IS NULL OR w.workflow_id COLLATE "C" LIKE $3::text)
  AND ($4::bigint IS NULL OR w.created_at >= {{s}}.from_us($4::bigint))
  AND ($5::bigint IS NULL OR w.created_at < {{s}}.from_us($5::bigint))
  AND ($6::bigint IS NULL OR w.ended_at >= {{s}}.from_us($6::bigint))
  AND ($7::bigint IS NULL OR w.ended_at < {{s}}.from_us($7::bigint))
  AND ($8::text IS NULL OR (w.started_by = 'schedule' AND w.origin = $8::text))
  AND ($9::text IS NULL OR (w.started_by = 'trigger' AND w.origin = $9::text))
  AND ($10::uuid IS NULL OR w.parent_run_id = $10::uuid)
  AND ($11::text IS NULL OR w.app_version = nullif($11::text, '') OR ($11::text = '' AND w.app_version IS NULL))
  AND (NOT $12::boolean OR (w.status = 'running' AND w.blocked_at IS NOT NULL))
