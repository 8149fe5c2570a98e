-- The columns of a run as lists show it (RunSummary).
w.workflow_id, w.run_id::text, w.name, w.status, w.latest, w.started_by,
  coalesce(w.origin, '') AS origin, coalesce(w.app_version, '') AS app_version,
  w.status = 'running' AND w.blocked_at IS NOT NULL AS blocked, {{s}}.epoch_us(w.created_at) AS created_us,
  {{s}}.epoch_us(w.updated_at) AS updated_us, {{s}}.epoch_us(w.ended_at) AS ended_us
