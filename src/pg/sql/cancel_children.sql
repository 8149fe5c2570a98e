-- Asks the running children of run $1 (ended) with the cancel policy to cancel, at most 1000 at
-- a time: $2 workflows channel. Returns their run ids.
WITH r AS (
  SELECT c.run_id FROM {{s}}.workflows c WHERE c.parent_run_id = $1::uuid AND {{orphan}}
  LIMIT 1000 FOR UPDATE OF c SKIP LOCKED),
{{request_children}}
SELECT w.run_id::text, (SELECT count(*) FROM n) AS notified FROM w
