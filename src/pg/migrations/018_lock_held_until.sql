-- An idempotency lock says itself until when it is held (`held_until`): its holder's
-- lease, moved by the holder's heartbeats. Judged from the holder's task row instead, a lock
-- taker's snapshot could show that row from before the holder's claim, and take the lock from
-- a live holder. And a key is held by the body, not the task: a body that runs on after its
-- task let go of the key (an attempt failed by its timeout, a task dropped by its run's end or
-- cancel, a task handed back at shutdown) keeps the lock (`outlives_task`), renewed by its
-- engine until the body returns, when the engine deletes it; a dead engine's hold runs out.
-- Locks in flight keep NULL, judged by their holder's lease as before: they upgrade in place.

ALTER TABLE {{s}}.idempotency_locks ADD COLUMN held_until timestamptz,
  ADD COLUMN outlives_task boolean NOT NULL DEFAULT false;
