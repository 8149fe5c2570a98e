-- Tenants kept apart (docs/operations.md, Many tenants on one server). Advisory locks belong to the
-- database, and any role that may connect to it can take any key: a stranger holding one of a
-- schema's keys could stall its engines. So what one engine does at a time locks rows of the
-- schema instead, which only roles that may write the schema can lock: a queue's admission its
-- row of `queues` (lock_queue.sql), a prune the row 'retention' here, a migration the schema's
-- version table (migrations.cpp).
CREATE TABLE {{s}}.locks (name text PRIMARY KEY);
INSERT INTO {{s}}.locks (name) VALUES ('retention');
-- Roles granted the schema before this table existed (grant_schema_roles) get on it what they
-- have on `queues`: an upgrade keeps an engine role's prunes working.
DO $$
DECLARE g record;
BEGIN
  FOR g IN SELECT a.grantee::regrole AS grantee, a.privilege_type
           FROM pg_class c, aclexplode(c.relacl) a
           WHERE c.oid = '{{s}}.queues'::regclass AND a.grantee NOT IN (0, c.relowner) LOOP
    EXECUTE format('GRANT %s ON {{s}}.locks TO %s', g.privilege_type, g.grantee);
  END LOOP;
END $$;

-- A new line for run `w` (migration 23's values); false when another transaction's is there.
CREATE FUNCTION {{s}}.open_queue_line(w {{s}}.workflows) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO {{s}}.queue_lines (queue, concurrency_key, priority, served, level, head_at, rises_at)
  VALUES (w.queue, w.concurrency_key, w.priority,
          coalesce((SELECT k.served FROM {{s}}.queue_keys k
                    WHERE k.queue = w.queue AND NOT k.attempt AND k.concurrency_key = w.concurrency_key), 0),
          w.priority, w.created_at, '-infinity')
  ON CONFLICT DO NOTHING;
  RETURN FOUND;
END $$;

-- A run joins its line under its bucket's shared advisory lock, taken without waiting (it writes
-- nothing). When the bucket is held exclusively (for a moment by an admission retiring lines of
-- it, lock_empty_lines.sql, or for any time by a session outside this schema's roles), it locks
-- the line's own row instead (FOR KEY SHARE: an admission's updates of the line do not wait for
-- it), and a retiring admission, which locks each line it retires (FOR UPDATE SKIP LOCKED), passes
-- over that line. Either way no line is retired while a run joins it unseen.
CREATE OR REPLACE FUNCTION {{s}}.join_queue_line() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF pg_try_advisory_xact_lock_shared({{s}}.queue_line_bucket(NEW.queue, NEW.concurrency_key, NEW.priority)) THEN
    -- Read first: most runs join a line that exists, and an insert that conflicts costs more.
    IF EXISTS (SELECT 1 FROM {{s}}.queue_lines l
               WHERE l.queue = NEW.queue AND l.concurrency_key = NEW.concurrency_key AND l.priority = NEW.priority) THEN
      RETURN NULL;
    END IF;
    PERFORM {{s}}.open_queue_line(NEW);
    RETURN NULL;
  END IF;
  LOOP
    PERFORM 1 FROM {{s}}.queue_lines l
    WHERE l.queue = NEW.queue AND l.concurrency_key = NEW.concurrency_key AND l.priority = NEW.priority
    FOR KEY SHARE;
    EXIT WHEN FOUND;
    -- Retired meanwhile, or never there: a line this transaction inserts no one else sees.
    EXIT WHEN {{s}}.open_queue_line(NEW);
  END LOOP;
  RETURN NULL;
END $$;
