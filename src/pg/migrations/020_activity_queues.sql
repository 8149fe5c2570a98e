-- Activities on named queues (docs/flow-control.md). A task carries the queue its call named
-- ('default' unless it named one), its run's concurrency key and its priority. A task on a named
-- queue is claimed only under the queue's advisory lock, in a statement that counts the queue's
-- running tasks (and its key's) first: the place is the task's own row while it runs, as a run's
-- is, so nothing leaks when an engine dies. Claims search per queue and activity name.
-- Attempt starts on a queue with a rate limit go into `queue_admissions` marked `attempt`: a
-- queue's rates count runs admitted and attempts started apart.
-- Tasks in flight are on the default queue: they upgrade in place.

ALTER TABLE {{s}}.tasks
  ADD COLUMN queue text NOT NULL DEFAULT 'default',
  ADD COLUMN concurrency_key text NOT NULL DEFAULT '',
  ADD COLUMN priority integer NOT NULL DEFAULT 0;

DROP INDEX {{s}}.tasks_available_by_name;
DROP INDEX {{s}}.tasks_leased_by_name;
CREATE INDEX tasks_available_by_queue ON {{s}}.tasks (queue, name, available_at) WHERE status = 'pending';
CREATE INDEX tasks_leased_by_queue ON {{s}}.tasks (queue, name, lease_until) WHERE status = 'running';
-- A named queue's claim: the keys with waiting tasks, each key's next ones, the running per key.
CREATE INDEX tasks_queued ON {{s}}.tasks (queue, concurrency_key, priority DESC, available_at)
  WHERE status = 'pending' AND queue <> 'default';
CREATE INDEX tasks_running_in_queue ON {{s}}.tasks (queue, concurrency_key)
  WHERE status = 'running' AND queue <> 'default';
-- A task cancelled while its attempt ran keeps its place until its body returns (or its lease
-- runs out): the claim counts those too.
CREATE INDEX tasks_cancelled_in_queue ON {{s}}.tasks (queue, lease_until)
  WHERE status = 'cancelled' AND queue <> 'default';

ALTER TABLE {{s}}.queue_admissions ADD COLUMN attempt boolean NOT NULL DEFAULT false;

-- Turns remember who was served (start-time fair queuing): a key's next turn follows the turn of
-- its latest run admitted or attempt started (`served`), and a key without a row starts at the
-- queue's turn (`run_turn`, `attempt_turn`: just before the latest admission's first turn). So a
-- key is served in turn even when none of its work is running at the moment, as at a concurrency
-- of 1. A key whose turn the queue's has passed needs no row: it goes.
ALTER TABLE {{s}}.queues
  ADD COLUMN run_turn bigint NOT NULL DEFAULT 0,
  ADD COLUMN attempt_turn bigint NOT NULL DEFAULT 0;
CREATE TABLE {{s}}.queue_keys (
  queue           text NOT NULL,
  attempt         boolean NOT NULL,  -- the turns of the queue's activity attempts, else its runs'
  concurrency_key text NOT NULL,
  served          bigint NOT NULL,
  PRIMARY KEY (queue, attempt, concurrency_key)
);
CREATE INDEX queue_keys_by_turn ON {{s}}.queue_keys (queue, attempt, served);

