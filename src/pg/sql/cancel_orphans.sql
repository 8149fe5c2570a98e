-- Asks any running children with the cancel policy whose parent is not running to cancel, at
-- most 1000: those a crash kept from being asked when their parent ended. $1 workflows channel.
WITH r AS (
  SELECT c.run_id FROM {{s}}.workflows c WHERE {{orphan}}
  LIMIT 1000 FOR UPDATE OF c SKIP LOCKED),
{{request_orphans}}
SELECT w.run_id::text, (SELECT count(*) FROM n) AS notified FROM w
