-- One prune at a time per schema, across engines: a row when this transaction holds the lock, none
-- when another prune holds it (not waited for). A row of the schema (migration 24): only roles
-- that may write the schema can hold it, unlike an advisory lock.
SELECT true FROM {{s}}.locks WHERE name = 'retention' FOR UPDATE SKIP LOCKED
