-- $1 names (json array), $2 limit, $3 owner, $4 lease ms, $5 claim token, $6 first of $2 lease tokens,
-- $7 the queues served (json array). Oldest first: runnable since, or due to wake since. Searched
-- per queue and workflow name, so a claim reads only the head of each one's index, never the whole
-- backlog (nor other services' or queues').
WITH c AS (
  SELECT * FROM (
    SELECT p.* FROM jsonb_array_elements_text($7::jsonb) AS q(queue), jsonb_array_elements_text($1::jsonb) AS n(name),
    LATERAL (
      SELECT run_id, runnable_since AS since FROM {{s}}.workflows WHERE {{runnable_workflow}}
      ORDER BY runnable_since LIMIT $2 FOR UPDATE SKIP LOCKED) AS p
    UNION ALL
    SELECT x.* FROM jsonb_array_elements_text($7::jsonb) AS q(queue), jsonb_array_elements_text($1::jsonb) AS n(name),
    LATERAL (
      SELECT run_id, wake_at FROM {{s}}.workflows WHERE {{waking_workflow}}
      ORDER BY wake_at LIMIT $2 FOR UPDATE SKIP LOCKED) AS x) AS waiting
  ORDER BY since LIMIT $2),
n AS (SELECT run_id, row_number() OVER () - 1 AS rn FROM c)
UPDATE {{s}}.workflows w
SET lease_token = $6::bigint + n.rn, lease_owner = $3, claim_token = $5,
    lease_until = {{now}} + $4::bigint * interval '1 millisecond'
FROM n WHERE w.run_id = n.run_id
RETURNING w.workflow_id, w.run_id::text, w.name, w.next_seq, w.lease_token,
          {{s}}.epoch_us({{now}}) AS now_us, {{start_data}}, {{replayed_seq}}, {{async_commit}}
