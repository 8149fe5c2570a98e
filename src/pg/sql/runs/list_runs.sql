-- A page of runs, newest first: $1 to $12 the filter (fragments/run_filter.sql), $13 and $14 the
-- cursor (created_at us and run id of the last run of the page before; NULL for the first page),
-- $15 how many.
SELECT {{run_summary_columns}}
FROM {{s}}.workflows w
WHERE {{run_filter}}
  AND ($13::bigint IS NULL OR (w.created_at, w.run_id) < ({{s}}.from_us($13::bigint), $14::uuid))
ORDER BY w.created_at DESC, w.run_id DESC LIMIT $15
