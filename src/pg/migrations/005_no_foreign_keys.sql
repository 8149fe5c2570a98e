-- No foreign keys. The engine writes journal, task and attempt rows only in the statement
-- that holds the workflow's (or task's) lease and has just updated that row, so the keys
-- proved nothing, and each check cost a query per row on every step. The one delete that
-- relied on their cascade (a reused workflow id) deletes its rows itself.

ALTER TABLE {{s}}.journal DROP CONSTRAINT journal_workflow_id_fkey;
ALTER TABLE {{s}}.tasks DROP CONSTRAINT tasks_workflow_id_fkey;
ALTER TABLE {{s}}.attempts DROP CONSTRAINT attempts_task_id_fkey;
