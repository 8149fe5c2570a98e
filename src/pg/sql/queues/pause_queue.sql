-- Pauses ($2 true) or resumes queue $1, said by $3 for reason $4 ('' when not audited); $5
-- workflows channel, $6 tasks channel (a resumed queue admits and starts at once). `found` 0 when
-- there is no such queue.
WITH u AS (
  UPDATE {{s}}.queues
  SET paused = $2, paused_at = CASE WHEN $2 THEN statement_timestamp() END, paused_by = CASE WHEN $2 THEN nullif($3, '') END,
      paused_reason = CASE WHEN $2 THEN nullif($4, '') END, updated_at = statement_timestamp()
  WHERE name = $1 RETURNING 1),
n AS (SELECT pg_notify($5, ''), pg_notify($6, '') FROM u WHERE NOT $2)
SELECT (SELECT count(*) FROM u) AS found, (SELECT count(*) FROM n) AS notified
