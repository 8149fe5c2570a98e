-- Whether named queue $1 holds a task of the activities $2 (json array) that a claim could take:
-- one due to start, or one whose lease ran out. Read before the claim takes the queue's lock, so
-- that an engine with nothing to take there takes no lock. One index probe per name.
SELECT EXISTS (
  SELECT 1 FROM jsonb_array_elements_text($2::jsonb) AS n(name)
  WHERE EXISTS (SELECT 1 FROM {{s}}.tasks t
                WHERE t.queue = $1 AND t.name = n.name AND t.status = 'pending' AND t.available_at <= {{now}})
     OR EXISTS (SELECT 1 FROM {{s}}.tasks t
                WHERE t.queue = $1 AND t.name = n.name AND t.status = 'running' AND t.lease_until < {{now}})) AS waiting
