-- Pauses ($3 true) or resumes the type named $2 of kind $1 ('workflow' or 'activity'), said by $4
-- for reason $5; $6 workflows channel, $7 tasks channel (what a resume frees is claimed at once),
-- $8 paused channel (every engine re-reads the paused types when it hears it).
-- `changed` 0 when a resume finds it not paused; a pause again records the new actor and reason.
WITH p AS (
  INSERT INTO {{s}}.paused_types (kind, name, paused_by, paused_reason)
  SELECT $1, $2, $4, $5 WHERE $3
  ON CONFLICT (kind, name) DO UPDATE
  SET paused_at = statement_timestamp(), paused_by = excluded.paused_by, paused_reason = excluded.paused_reason
  RETURNING 1),
r AS (DELETE FROM {{s}}.paused_types WHERE kind = $1 AND name = $2 AND NOT $3 RETURNING 1),
n AS (SELECT pg_notify($6, ''), pg_notify($7, '') FROM r),
heard AS (SELECT pg_notify($8, '') WHERE EXISTS (SELECT 1 FROM p) OR EXISTS (SELECT 1 FROM r))
SELECT (SELECT count(*) FROM p) + (SELECT count(*) FROM r) AS changed,
       (SELECT count(*) FROM n) + (SELECT count(*) FROM heard) AS notified
