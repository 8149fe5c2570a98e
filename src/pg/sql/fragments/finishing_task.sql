-- In complete_steps: task `k` is finished by input row `i` under a live lease. The test is one
-- CASE so that no index on running tasks matches it: each row is found by primary key (its run
-- and step), not by walking every running task (the plan is made once, when the statistics may
-- say there are none).
k.run_id = i.task_run AND k.step = i.step AND k.lease_token = i.lease_token
    AND CASE WHEN k.status = 'running' THEN k.lease_until >= {{now}} ELSE false END
