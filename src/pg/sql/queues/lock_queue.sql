-- Queue $1's admission lock, held to the end of this transaction: one admission (or limits
-- change) at a time per queue, across engines. The admission counts in a statement of its own,
-- after this one, so its snapshot sees every admission committed before it.
SELECT pg_advisory_xact_lock(hashtext('durable queues'), hashtext('{{s}}.' || $1))
