-- Id $1's latest run, unless it is running, is its latest no more (a fork takes its place). One row
-- when it was retired.
UPDATE {{s}}.workflows SET latest = false WHERE workflow_id = $1 AND latest AND status <> 'running' RETURNING 1
