-- Paused workflow and activity types (docs/flow-control.md): no run of a paused workflow is
-- claimed, admitted, leased at its start or continued in place by a step, and no attempt of a
-- paused activity starts; what runs goes on to its end. No statement on the step path reads this
-- table: each engine keeps a copy, re-read when a pause or resume is announced (NOTIFY) and every
-- poll interval, and asks the database only for the types not paused.
CREATE TABLE {{s}}.paused_types (
  kind          text NOT NULL CHECK (kind IN ('workflow', 'activity')),
  name          text NOT NULL,
  paused_at     timestamptz NOT NULL DEFAULT statement_timestamp(),
  paused_by     text NOT NULL,
  paused_reason text NOT NULL,
  PRIMARY KEY (kind, name)
);
