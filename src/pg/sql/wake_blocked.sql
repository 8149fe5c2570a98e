-- Blocked runs of workflow names $1 (json array) that no engine of app version $2 tried since
-- they last made progress: due now, for this engine's code to try. No NOTIFY: the engine wakes
-- its own runners, which so come first (others find them due at their next poll), rather than
-- racing every engine, those of the version that blocked them included.
WITH w AS (
  UPDATE {{s}}.workflows SET wake_at = {{now}}, updated_at = statement_timestamp()
  WHERE status = 'running' AND blocked_at IS NOT NULL AND name IN (SELECT jsonb_array_elements_text($1::jsonb))
    AND NOT (blocked->'versions' ? $2) AND wake_at > {{now}}
  RETURNING 1)
SELECT count(*) AS woken FROM w
