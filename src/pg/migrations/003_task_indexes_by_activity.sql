-- Claims and the queue age find an activity's oldest waiting tasks without walking past
-- other activities' backlogs: the task indexes lead with the activity name.

CREATE INDEX tasks_available_by_name ON {{s}}.tasks (name, available_at) WHERE status = 'pending';
CREATE INDEX tasks_leased_by_name ON {{s}}.tasks (name, lease_until) WHERE status = 'running';
DROP INDEX {{s}}.tasks_available;
DROP INDEX {{s}}.tasks_leased;
