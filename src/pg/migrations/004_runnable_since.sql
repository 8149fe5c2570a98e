-- Runnable workflows are claimed in the order they became runnable, not by updated_at,
-- which every step changes. With no indexed column changing, a step's update of its workflow
-- row is a HOT update (no new index entries), and the spare room per page makes that likely.
-- The time conversions are STABLE, as their bodies are (time zone arithmetic): declared
-- IMMUTABLE, PostgreSQL would not inline them and planned their bodies on every call.

ALTER FUNCTION {{s}}.epoch_us(timestamptz) STABLE;
ALTER FUNCTION {{s}}.from_us(bigint) STABLE;
ALTER TABLE {{s}}.workflows ADD COLUMN runnable_since timestamptz NOT NULL DEFAULT now();
ALTER TABLE {{s}}.workflows SET (fillfactor = 80);
CREATE INDEX workflows_runnable_since ON {{s}}.workflows (runnable_since) WHERE status = 'running' AND runnable;
DROP INDEX {{s}}.workflows_runnable;
