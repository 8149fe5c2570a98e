-- After a start whose answer was lost: whether run $2::uuid of id $1 exists, and its lease
-- token while it is still leased to owner $3 (else NULL: any runner claims it).
SELECT true AS ours, CASE WHEN lease_owner = $3 AND lease_until >= {{now}} THEN lease_token END AS lease_token,
       {{s}}.epoch_us({{now}}) AS now_us
FROM {{s}}.workflows WHERE run_id = $2::uuid AND workflow_id = $1
