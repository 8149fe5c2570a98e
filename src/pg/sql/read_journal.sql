-- $1 run id, $2 first seq. One row per event, each with the run's id and workflow name; one
-- row with no event when there is none from $2 on. The rows read start at the one holding $2.
SELECT w.workflow_id, w.run_id::text, w.name AS workflow_name, {{replayed_seq}}, j.seq, j.kind,
       coalesce(j.step, -1) AS step,
       coalesce(j.name, '') AS event_name, j.data::text
FROM {{s}}.workflows w LEFT JOIN (
  SELECT * FROM {{s}}.journal_events
  WHERE run_id = $1::uuid AND seq >= $2
    AND row_seq >= (SELECT coalesce(max(r.seq), 0) FROM {{s}}.journal r WHERE r.run_id = $1::uuid AND r.seq <= $2)
) j ON true
WHERE w.run_id = $1::uuid ORDER BY j.seq
