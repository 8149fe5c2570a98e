-- Terminates run $1 at once, its code not told: $2 ended channel.
WITH r AS (SELECT $1::uuid AS run_id),
{{cancel_one}}
SELECT (SELECT count(*) FROM w) AS cancelled, (SELECT count(*) FROM n) AS notified
