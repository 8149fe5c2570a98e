-- A task that finds its idempotency key held waits, handed back, until the holder lets
-- go: it marks the lock row `waiting` in the statement that hands it back, so the holder's
-- release (which must lock that row) learns of it, and the waiters are found by (activity,
-- key) and made claimable at once instead of at a poll.

ALTER TABLE {{s}}.idempotency_locks ADD COLUMN waiting boolean NOT NULL DEFAULT false;
CREATE INDEX tasks_waiting_for_key ON {{s}}.tasks (name, idempotency_key)
  WHERE status = 'pending' AND idempotency_key IS NOT NULL;
-- Lease tokens come from blocks reserved in synchronous commits (see src/pg/lease_tokens.hpp):
-- a sequence advanced in asynchronous claims can hand a token out twice after a crash. The
-- first block starts far above the sequence, whose tokens may still be held by runs in flight
-- and which engines of the previous version go on using until they are upgraded.
CREATE TABLE {{s}}.lease_token_blocks (
  only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
  next     bigint NOT NULL
);
INSERT INTO {{s}}.lease_token_blocks (next) SELECT last_value + (1::bigint << 40) FROM {{s}}.lease_tokens;
