-- Queue $1's admission lock, held to the end of this transaction: one admission (or limits
-- change) at a time per queue, across engines. The admission counts in a statement of its own,
-- after this one, so its snapshot sees every admission committed before it. The queue's own row
-- (migration 24): only roles that may write this schema can hold it, unlike an advisory lock.
-- NO KEY UPDATE: what only reads the row, or keys on it, does not wait. A queue not defined yet
-- has no row: no row comes back, and its callers admit and claim nothing (a define inserts it).
SELECT 1 FROM {{s}}.queues WHERE name = $1 FOR NO KEY UPDATE
