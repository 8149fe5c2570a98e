-- Lines (docs/flow-control.md): each priority of each concurrency key with queued runs on a named
-- queue has a row here, ordered by the turn its key was last served, so that an admission reads
-- the few lines next in turn and not every key with runs waiting (with 1,000 keys waiting it read
-- them all, for every batch it admitted).
-- - A run that becomes queued (a start, a continue-as-new, a resume, a fork: any insert or update
--   of `queued`) joins its line through the trigger below, which creates the line when it has none.
-- - An admission retires a line it finds empty only under an exclusive lock of the line's bucket
--   (queue_line_bucket), taken without waiting, and checks it is empty again after the lock is
--   held; a run joining a line holds the bucket's shared lock to the end of its transaction. So a
--   line is never retired while a run is joining it unseen, and no queued run is ever left without
--   its line.
-- - `served` is a copy of the key's latest turn served (queue_keys, or 0 when the key has none):
--   the admission sets it on every line of a key it serves.
CREATE TABLE {{s}}.queue_lines (
  queue           text NOT NULL,
  concurrency_key text NOT NULL,
  priority        int NOT NULL,
  served          bigint NOT NULL,
  PRIMARY KEY (queue, concurrency_key, priority)
);
-- An admission walks the lines of each priority in turn, highest priority first.
CREATE INDEX queue_lines_in_turn ON {{s}}.queue_lines (queue, priority, served, concurrency_key);
-- Each admission ends the queued runs asked to cancel: found without reading every queued run.
CREATE INDEX workflows_queued_cancel_requested ON {{s}}.workflows (queue)
  WHERE status = 'running' AND queued AND cancel_requested_at IS NOT NULL;

-- One of 1,024 lock buckets per schema: a transaction that starts runs on 10,000 keys takes at
-- most 1,024 shared advisory locks (PostgreSQL's lock table is sized by max_locks_per_transaction).
CREATE FUNCTION {{s}}.queue_line_bucket(queue text, concurrency_key text, priority int) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$
  SELECT hashtextextended('durable.queue_lines:{{s}}', 0) # (hashtextextended(queue || chr(1) || concurrency_key || chr(1) || priority, 0) & 1023)
$$;

CREATE FUNCTION {{s}}.join_queue_line() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock_shared({{s}}.queue_line_bucket(NEW.queue, NEW.concurrency_key, NEW.priority));
  -- Read first: most runs join a line that exists, and an insert that conflicts costs more.
  IF NOT EXISTS (SELECT 1 FROM {{s}}.queue_lines l
                 WHERE l.queue = NEW.queue AND l.concurrency_key = NEW.concurrency_key AND l.priority = NEW.priority) THEN
    INSERT INTO {{s}}.queue_lines (queue, concurrency_key, priority, served)
    VALUES (NEW.queue, NEW.concurrency_key, NEW.priority,
            coalesce((SELECT k.served FROM {{s}}.queue_keys k
                      WHERE k.queue = NEW.queue AND NOT k.attempt AND k.concurrency_key = NEW.concurrency_key), 0))
    ON CONFLICT DO NOTHING;
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER join_queue_line AFTER INSERT OR UPDATE OF queued ON {{s}}.workflows FOR EACH ROW
  WHEN (NEW.queued AND NEW.status = 'running') EXECUTE FUNCTION {{s}}.join_queue_line();

-- Runs queued when this version arrives join their lines here.
INSERT INTO {{s}}.queue_lines (queue, concurrency_key, priority, served)
SELECT DISTINCT w.queue, w.concurrency_key, w.priority, coalesce(k.served, 0)
FROM {{s}}.workflows w
LEFT JOIN {{s}}.queue_keys k ON k.queue = w.queue AND NOT k.attempt AND k.concurrency_key = w.concurrency_key
WHERE w.status = 'running' AND w.queued;
