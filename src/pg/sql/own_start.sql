-- After a start whose answer was lost: whether run $2::uuid of id $1 exists, and its lease
-- token while it still holds the lease the start gave it (owner $3, token $4), else NULL: its
-- first replay went in with it, or a runner claimed it since (this engine's own, maybe).
SELECT true AS ours,
       CASE WHEN lease_owner = $3 AND lease_token = $4 AND lease_until >= {{now}} THEN lease_token END AS lease_token,
       {{s}}.epoch_us({{now}}) AS now_us
FROM {{s}}.workflows WHERE run_id = $2::uuid AND workflow_id = $1
