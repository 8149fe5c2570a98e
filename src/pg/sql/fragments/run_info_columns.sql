-- The columns of a run in full (RunInfo), after fragments/run_summary_columns.sql.
w.input::text, w.result::text, coalesce(w.error_type, '') AS error_type,
  coalesce(w.error_message, '') AS error_message, w.next_seq, coalesce(w.parent_run_id::text, '') AS parent_run_id,
  coalesce(w.forked_from_run::text, '') AS forked_from_run, coalesce(w.forked_from_step, -1) AS forked_from_step,
  coalesce(w.continued_from::text, '') AS continued_from, w.blocked::text AS blocked_by,
  {{s}}.epoch_us(w.blocked_at) AS blocked_us,
  CASE WHEN w.status = 'continued' THEN w.result->>'continued_as' ELSE '' END AS continued_as,
  (SELECT count(*) FROM {{s}}.journal_events j WHERE j.run_id = w.run_id AND j.kind = 'activity_scheduled') AS activities,
  -- the attempts of open, failed and dropped tasks, then of completed ones (whose rows are gone),
  -- not those of the events a fork copied (the source's; written with the run, at its created_at)
  (SELECT coalesce(sum(t.attempt), 0) FROM {{s}}.tasks t WHERE t.run_id = w.run_id)
    + (SELECT coalesce(sum((j.data->>'attempts')::int), 0) FROM {{s}}.journal j  -- a completed event is its row's first
       WHERE j.run_id = w.run_id AND j.kind = 'activity_completed'
         AND NOT (w.forked_from_run IS NOT NULL AND j.created_at = w.created_at)) AS attempts,
  (SELECT count(*) FROM {{s}}.attempts a WHERE a.run_id = w.run_id AND a.outcome <> 'completed') AS failed_attempts
