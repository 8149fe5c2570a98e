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

-- Weights per concurrency key (QueueSpec::key_weights, {"key": weight}): a key of weight w takes
-- w turns where a key without one takes one. Turns are now counted in millionths of a round, so
-- that a weight divides one: the turns stored are scaled to match, and keys keep their places.
ALTER TABLE {{s}}.queues ADD COLUMN key_weights jsonb NOT NULL DEFAULT '{}';
UPDATE {{s}}.queues SET run_turn = run_turn * 1000000, attempt_turn = attempt_turn * 1000000;
UPDATE {{s}}.queue_keys SET served = served * 1000000;
