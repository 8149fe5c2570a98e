-- Continue-as-new. A run ends `continued` (its result names the next run) and the next run
-- of its id starts in the same transaction, recording the run it continued. A continued run has
-- not ended for its parent: the last run of the chain tells it. The constraint is checked
-- against the rows there are (no rewrite); runs in flight upgrade in place.

ALTER TABLE {{s}}.workflows ADD COLUMN continued_from uuid,
  DROP CONSTRAINT workflows_status_check,
  ADD CONSTRAINT workflows_status_check CHECK (status IN ('running', 'completed', 'failed', 'cancelled', 'continued'));
DROP TRIGGER tell_parent ON {{s}}.workflows;
CREATE TRIGGER tell_parent BEFORE UPDATE OF status ON {{s}}.workflows FOR EACH ROW
  WHEN (OLD.status = 'running' AND NEW.status IN ('completed', 'failed', 'cancelled') AND NEW.parent_run_id IS NOT NULL
        AND NOT OLD.parent_told)
  EXECUTE FUNCTION {{s}}.tell_parent();
