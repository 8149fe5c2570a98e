-- Messages and published events. Each run has an inbox: a message is a row the moment it is sent, numbered per
-- run in send order (workflows.messages_sent counts them, under the run's row lock), until a
-- replay's commit marks it received at a step of the journal. Adding a column with a constant
-- default rewrites nothing, so runs in flight upgrade in place. `events` holds the latest
-- value a run published under each key (WorkflowContext::set_event).

ALTER TABLE {{s}}.workflows ADD COLUMN messages_sent integer NOT NULL DEFAULT 0;
CREATE TABLE {{s}}.messages (
  run_id          uuid NOT NULL,
  seq             integer NOT NULL,
  topic           text NOT NULL,
  message_id      uuid NOT NULL,
  payload         jsonb NOT NULL,
  idempotency_key text,
  sent_at         timestamptz NOT NULL DEFAULT now(),
  received_step   integer,
  received_at     timestamptz,
  PRIMARY KEY (run_id, seq)
);
CREATE INDEX messages_unreceived ON {{s}}.messages (run_id, topic, seq) WHERE received_step IS NULL;
CREATE UNIQUE INDEX messages_idempotency ON {{s}}.messages (run_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE TABLE {{s}}.events (
  run_id  uuid NOT NULL,
  key     text NOT NULL,
  value   jsonb NOT NULL,
  step    integer NOT NULL,
  set_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (run_id, key)
);
