-- Versioning. A run records the app version of the engine that started it, then of each
-- that committed a replay of it (NULL: unversioned). A run whose code no longer replays its
-- journal is blocked, not failed (EngineOptions::on_nondeterminism): it stays running with
-- `blocked_at` and `blocked` (the divergence, the versions that blocked it since it last made
-- progress, how many times), due again later by `wake_at`; the next commit of a replay clears
-- them. The index finds blocked runs for the sweep that wakes them for engines of another
-- version, and for the gauge. `next_seq - replay_lag` is the journal length the last committed
-- replay had read: outcomes journaled from there on are news to the code, and what it logs
-- after one is written (WorkflowContext::logger). Kept as a lag, not a length: a step that
-- continues in place leaves it as it was (one event behind), and a column that changed at
-- every step, the row's last, would have cost the WAL record of each step's update its shared
-- suffix (about 70 bytes). Every statement that appends to a journal adds to it; a new run's 1
-- says no replay was committed. Nullable columns and a constant default rewrite nothing: runs
-- in flight upgrade in place (their next replay logs as their first would).

ALTER TABLE {{s}}.workflows ADD COLUMN app_version text, ADD COLUMN blocked_at timestamptz, ADD COLUMN blocked jsonb,
  ADD COLUMN replay_lag integer NOT NULL DEFAULT 1;
CREATE INDEX workflows_blocked ON {{s}}.workflows (name, blocked_at) WHERE status = 'running' AND blocked_at IS NOT NULL;
CREATE OR REPLACE FUNCTION {{s}}.tell_parent() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  at_seq integer;
BEGIN
  UPDATE {{s}}.workflows
  SET next_seq = next_seq + 1, replay_lag = replay_lag + 1, runnable = true,
      runnable_since = CASE WHEN runnable THEN runnable_since ELSE now() END, updated_at = now()
  WHERE run_id = NEW.parent_run_id AND status = 'running'
  RETURNING next_seq - 1 INTO at_seq;
  IF at_seq IS NOT NULL THEN
    INSERT INTO {{s}}.journal (run_id, seq, kind, step, name, data)
    VALUES (NEW.parent_run_id, at_seq, CASE WHEN NEW.status = 'completed' THEN 'child_completed' ELSE 'child_failed' END,
            NEW.parent_step, NEW.name,
            CASE WHEN NEW.status = 'completed' THEN jsonb_build_object('result', NEW.result)
                 ELSE jsonb_build_object(
                   'status', NEW.status,
                   'error_type', coalesce(NEW.error_type,
                                          CASE WHEN NEW.status = 'cancelled' THEN 'durable::WorkflowCancelled' END, ''),
                   'error_message', coalesce(NEW.error_message,
                                             CASE WHEN NEW.status = 'cancelled' THEN 'the child run was cancelled' END,
                                             '')) END);
    PERFORM pg_notify('durable_w_' || TG_TABLE_SCHEMA, '');
  END IF;
  NEW.parent_told := true;
  RETURN NEW;
END $$;
