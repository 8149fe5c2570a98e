-- Runs are first-class. A workflows row is one run (keyed by run id); a workflow id names
-- its runs, the latest marked `latest` (unique per id), so at most one of them is running. The
-- journal and tasks belong to a run, and a new run under an id keeps the earlier runs' history.
-- Each run records how it was started. Runs are listed newest first by the indexes below, and
-- operator actions go to `audit`. Engines of earlier versions must be stopped before this runs:
-- their statements address workflows by id alone.

ALTER TABLE {{s}}.workflows
  ADD COLUMN latest boolean NOT NULL DEFAULT true,
  ADD COLUMN started_by text NOT NULL DEFAULT 'call'
    CHECK (started_by IN ('call', 'schedule', 'trigger', 'fork', 'child', 'continued')),
  ADD COLUMN origin text,                 -- the schedule id or trigger name that started it
  ADD COLUMN parent_run_id uuid,          -- the run that started it as a child
  ADD COLUMN forked_from_run uuid,        -- the run whose journal it copied ...
  ADD COLUMN forked_from_step integer;    -- ... up to (not including) this step
ALTER TABLE {{s}}.workflows DROP CONSTRAINT workflows_pkey, DROP CONSTRAINT workflows_run_id_key,
  ADD CONSTRAINT workflows_pkey PRIMARY KEY (run_id);
CREATE UNIQUE INDEX workflows_latest ON {{s}}.workflows (workflow_id) WHERE latest;
-- The runs of an id, and ids by prefix (byte order, so a prefix is a range).
CREATE INDEX workflows_by_id ON {{s}}.workflows ((workflow_id COLLATE "C"), created_at);
CREATE INDEX workflows_listed ON {{s}}.workflows (created_at, run_id);
CREATE INDEX workflows_listed_by_status ON {{s}}.workflows (status, created_at, run_id);
CREATE INDEX workflows_listed_by_name ON {{s}}.workflows (name, created_at, run_id);
CREATE INDEX workflows_listed_by_origin ON {{s}}.workflows (origin, created_at, run_id) WHERE origin IS NOT NULL;
CREATE INDEX workflows_children ON {{s}}.workflows (parent_run_id) WHERE parent_run_id IS NOT NULL;
CREATE INDEX workflows_ended ON {{s}}.workflows (ended_at) WHERE status <> 'running';

-- Earlier runs of reused ids, of which only a `runs` row was kept (their history was deleted).
INSERT INTO {{s}}.workflows (workflow_id, run_id, name, status, input, next_seq, runnable, latest, created_at,
                           updated_at, ended_at)
SELECT r.workflow_id, r.run_id, r.name, r.status, 'null', 0, false, false, r.started_at,
       coalesce(r.ended_at, r.started_at), r.ended_at
FROM {{s}}.runs r WHERE NOT EXISTS (SELECT 1 FROM {{s}}.workflows w WHERE w.run_id = r.run_id);
DROP TABLE {{s}}.runs;

-- Rows of no workflow (none are written; no reader could reach them) cannot be given a run.
ALTER TABLE {{s}}.journal ADD COLUMN run_id uuid;
UPDATE {{s}}.journal j SET run_id = w.run_id FROM {{s}}.workflows w WHERE w.workflow_id = j.workflow_id AND w.latest;
DELETE FROM {{s}}.journal WHERE run_id IS NULL;
ALTER TABLE {{s}}.journal ALTER COLUMN run_id SET NOT NULL, DROP CONSTRAINT journal_pkey,
  ADD CONSTRAINT journal_pkey PRIMARY KEY (run_id, seq);
-- Runs a schedule started say so in their start event. (Trigger-started runs cannot be told
-- from others by their rows: they stay 'call'.)
UPDATE {{s}}.workflows w SET started_by = 'schedule', origin = j.data->'schedule'->>'id'
FROM {{s}}.journal j WHERE j.run_id = w.run_id AND j.seq = 0 AND j.data ? 'schedule';

-- attempt_base: the attempts started before the run was last resumed (its retry policy counts
-- the attempts after it; attempts rows keep one numbering).
ALTER TABLE {{s}}.tasks ADD COLUMN run_id uuid, ADD COLUMN attempt_base integer NOT NULL DEFAULT 0;
UPDATE {{s}}.tasks t SET run_id = w.run_id FROM {{s}}.workflows w WHERE w.workflow_id = t.workflow_id AND w.latest;
DELETE FROM {{s}}.tasks WHERE run_id IS NULL;
ALTER TABLE {{s}}.tasks ALTER COLUMN run_id SET NOT NULL, DROP CONSTRAINT tasks_workflow_id_step_key,
  ADD CONSTRAINT tasks_run_step UNIQUE (run_id, step);

-- Every operator action: who (as the caller says), why, when, and what it touched.
CREATE TABLE {{s}}.audit (
  audit_id    bigserial PRIMARY KEY,
  at          timestamptz NOT NULL DEFAULT now(),
  actor       text NOT NULL,
  action      text NOT NULL,
  reason      text NOT NULL CHECK (reason <> ''),
  workflow_id text,
  run_id      uuid,
  details     jsonb NOT NULL DEFAULT '{}'
);
