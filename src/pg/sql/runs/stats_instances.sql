-- Every engine that is registered or holds a live activity lease, with its capacity and leases.
WITH leased AS (
  SELECT lease_owner AS owner, count(*) AS n FROM {{s}}.tasks, (SELECT now() + skew AS now FROM {{s}}.clock) AS n
  WHERE status = 'running' AND lease_until >= n.now GROUP BY lease_owner)
SELECT coalesce(e.owner, l.owner) AS owner, coalesce(e.instance, '') AS instance,
       coalesce(e.app_version, '') AS app_version, coalesce(e.activity_capacity, 0) AS activity_capacity,
       coalesce(e.workflow_capacity, 0) AS workflow_capacity, coalesce(l.n, 0) AS leased,
       {{s}}.epoch_us(e.started_at) AS started_us, {{s}}.epoch_us(e.seen_at) AS seen_us,
       coalesce(e.expires_at >= now(), false) AS alive
FROM {{s}}.engines e FULL JOIN leased l ON l.owner = e.owner ORDER BY 1
