-- Child workflows and cancel requests. A cancel of a run is asked for (cancel_requested_at, and
-- a cancel_requested event in its journal, which its code sees). A child is a run with its parent's run and the step that started it
-- (inserted by the parent's replay commit), and what becomes of it when the parent ends. When a
-- child ends, the database itself journals that in its parent, once (`parent_told`), under
-- the parent's row lock, and makes the parent runnable: every way a run ends (a replay, a
-- cancel, an operator) goes through the status column. A replay commit that finds a child id
-- taken since the replay read it is refused with SQLSTATE DUR01 and decided again. Nullable
-- columns and a constant default rewrite nothing: runs in flight upgrade in place.

ALTER TABLE {{s}}.workflows
  ADD COLUMN parent_step integer,
  ADD COLUMN parent_close text CHECK (parent_close IN ('cancel', 'abandon')),
  ADD COLUMN parent_told boolean NOT NULL DEFAULT false,
  ADD COLUMN cancel_requested_at timestamptz;
CREATE INDEX workflows_running_children ON {{s}}.workflows (parent_run_id)
  WHERE status = 'running' AND parent_close = 'cancel' AND cancel_requested_at IS NULL;

CREATE FUNCTION {{s}}.refuse_commit(reason text) RETURNS integer LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION USING ERRCODE = 'DUR01', MESSAGE = reason;
END $$;

CREATE FUNCTION {{s}}.tell_parent() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  at_seq integer;
BEGIN
  UPDATE {{s}}.workflows
  SET next_seq = next_seq + 1, runnable = true,
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
CREATE TRIGGER tell_parent BEFORE UPDATE OF status ON {{s}}.workflows FOR EACH ROW
  WHEN (OLD.status = 'running' AND NEW.status <> 'running' AND NEW.parent_run_id IS NOT NULL AND NOT OLD.parent_told)
  EXECUTE FUNCTION {{s}}.tell_parent();
