-- Priority aging (QueueSpec::priority_aging, docs/flow-control.md): on a queue that has it, a
-- queued run's priority rises by one for every `priority_aging_ms` it has waited (an activity
-- task's, since it came due), up to the highest priority waiting on the queue, so that no run
-- of low priority waits behind higher ones forever. Where it rises to, it takes its turn with
-- the runs there (keys still take turns).
ALTER TABLE {{s}}.queues ADD COLUMN priority_aging_ms bigint CHECK (priority_aging_ms > 0);

-- A line (migration 22) is walked in the order of its `level`: its priority, or on a queue with
-- aging the priority its oldest queued run (`head_at`) has risen to. `rises_at`: when the line is
-- to be looked at again (its level rises, or its head may have moved on; '-infinity': at the next
-- admission); NULL on a queue whose aging was unset. An admission first updates the lines due
-- (age_lines.sql), each from its oldest queued run.
ALTER TABLE {{s}}.queue_lines ADD COLUMN level int, ADD COLUMN head_at timestamptz, ADD COLUMN rises_at timestamptz;
UPDATE {{s}}.queue_lines l SET level = l.priority,
  head_at = coalesce((SELECT min(w.created_at) FROM {{s}}.workflows w
                      WHERE w.queue = l.queue AND w.concurrency_key = l.concurrency_key AND w.priority = l.priority
                        AND w.status = 'running' AND w.queued), now());
ALTER TABLE {{s}}.queue_lines ALTER COLUMN level SET NOT NULL, ALTER COLUMN head_at SET NOT NULL;
DROP INDEX {{s}}.queue_lines_in_turn;
-- Two lines of a key may come to the same level: the priority orders them.
CREATE INDEX queue_lines_in_turn ON {{s}}.queue_lines (queue, level, served, concurrency_key, priority);
CREATE INDEX queue_lines_by_priority ON {{s}}.queue_lines (queue, priority);
CREATE INDEX queue_lines_rising ON {{s}}.queue_lines (queue, rises_at) WHERE rises_at IS NOT NULL;

-- A run joins its line as before (it reads the line and writes nothing when the line is there: a
-- start holds no lock a queue's admission waits for); a new line starts at the run's priority and
-- is due to be looked at at once (age_lines.sql passes over the lines of a queue without aging).
-- A run older than its line's head (a resumed or forked one) is seen at the line's next rise, a
-- step at most.
CREATE OR REPLACE FUNCTION {{s}}.join_queue_line() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock_shared({{s}}.queue_line_bucket(NEW.queue, NEW.concurrency_key, NEW.priority));
  -- Read first: most runs join a line that exists, and an insert that conflicts costs more.
  IF NOT EXISTS (SELECT 1 FROM {{s}}.queue_lines l
                 WHERE l.queue = NEW.queue AND l.concurrency_key = NEW.concurrency_key AND l.priority = NEW.priority) THEN
    INSERT INTO {{s}}.queue_lines (queue, concurrency_key, priority, served, level, head_at, rises_at)
    VALUES (NEW.queue, NEW.concurrency_key, NEW.priority,
            coalesce((SELECT k.served FROM {{s}}.queue_keys k
                      WHERE k.queue = NEW.queue AND NOT k.attempt AND k.concurrency_key = NEW.concurrency_key), 0),
            NEW.priority, NEW.created_at, '-infinity')
    ON CONFLICT DO NOTHING;
  END IF;
  RETURN NULL;
END $$;
