-- What a claim whose answer was lost had taken: $1 claim token
SELECT t.task_id, t.run_id::text, t.workflow_id, t.step, t.name, t.input::text, t.options::text, t.attempt,
       t.attempt_base, t.lease_token,
       CASE WHEN l.ended_at IS NOT NULL THEN 'running' ELSE 'pending' END AS was,
       t.heartbeat::text, {{s}}.epoch_us(t.attempt_started_at) AS claimed_at_us,
       {{s}}.epoch_us(t.first_started_at) AS first_started_us, {{s}}.epoch_us(l.ended_at) AS lease_lost_us
FROM {{s}}.tasks t
LEFT JOIN {{s}}.attempts l ON l.task_id = t.task_id AND l.attempt = t.attempt - 1 AND l.outcome = 'lease_expired'
WHERE t.claim_token = $1 AND t.status = 'running' AND t.lease_until >= {{now}}
