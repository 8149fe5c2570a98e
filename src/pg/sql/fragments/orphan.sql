-- In children's cancellation: a running child `c` with the cancel policy, not asked to cancel
-- yet, whose parent is not running (ended, or deleted).
c.status = 'running' AND c.parent_close = 'cancel' AND c.cancel_requested_at IS NULL
    AND NOT EXISTS (SELECT 1 FROM {{s}}.workflows p WHERE p.run_id = c.parent_run_id AND p.status = 'running')
