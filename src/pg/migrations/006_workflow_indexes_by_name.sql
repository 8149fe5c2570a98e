-- Runnable and waking workflows are found per workflow name, as tasks are per activity
-- name (3): a claim reads the head of its names' indexes, not every runnable workflow.

CREATE INDEX workflows_runnable_by_name ON {{s}}.workflows (name, runnable_since) WHERE status = 'running' AND runnable;
CREATE INDEX workflows_waking_by_name ON {{s}}.workflows (name, wake_at) WHERE status = 'running' AND wake_at IS NOT NULL;
DROP INDEX {{s}}.workflows_runnable_since;
DROP INDEX {{s}}.workflows_waking;
