-- The journal, workflows, activity tasks and their attempts, and the clock.

CREATE TABLE {{s}}.clock (
  id   boolean PRIMARY KEY DEFAULT true CHECK (id),
  skew interval NOT NULL DEFAULT interval '0'   -- only a test mode moves it (time skipping)
);
INSERT INTO {{s}}.clock DEFAULT VALUES;

-- The one clock every due time, lease and timer is judged by.
CREATE FUNCTION {{s}}.db_now() RETURNS timestamptz LANGUAGE sql STABLE
  AS $$ SELECT now() + skew FROM {{s}}.clock $$;
CREATE FUNCTION {{s}}.epoch_us(t timestamptz) RETURNS bigint LANGUAGE sql IMMUTABLE
  AS $$ SELECT (extract(epoch FROM t) * 1000000)::bigint $$;
CREATE FUNCTION {{s}}.from_us(us bigint) RETURNS timestamptz LANGUAGE sql IMMUTABLE
  AS $$ SELECT timestamptz 'epoch' + us * interval '1 microsecond' $$;

CREATE SEQUENCE {{s}}.lease_tokens;

CREATE TABLE {{s}}.workflows (
  workflow_id   text PRIMARY KEY,
  run_id        uuid NOT NULL UNIQUE,
  name          text NOT NULL,
  status        text NOT NULL CHECK (status IN ('running', 'completed', 'failed', 'cancelled')),
  input         jsonb NOT NULL,
  result        jsonb,
  error_type    text,
  error_message text,
  next_seq      integer NOT NULL,              -- the journal's length: the next event's seq
  runnable      boolean NOT NULL,              -- events arrived that no replay has seen yet
  wake_at       timestamptz,                   -- the earliest timer still pending
  lease_token   bigint,                        -- fencing token of the replay holding it
  lease_owner   text,
  claim_token   text,                          -- which claim took it: an in-doubt claim is recovered by it
  lease_until   timestamptz,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now(),
  ended_at      timestamptz
);
CREATE INDEX workflows_runnable ON {{s}}.workflows (updated_at) WHERE status = 'running' AND runnable;
CREATE INDEX workflows_waking ON {{s}}.workflows (wake_at) WHERE status = 'running' AND wake_at IS NOT NULL;

-- Append-only; (workflow_id, seq) keeps sequence numbers unique, next_seq keeps them gap-free.
CREATE TABLE {{s}}.journal (
  workflow_id text NOT NULL REFERENCES {{s}}.workflows ON DELETE CASCADE,
  seq         integer NOT NULL,
  kind        text NOT NULL,
  step        integer,
  name        text,
  data        jsonb NOT NULL DEFAULT '{}',
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (workflow_id, seq)
);

CREATE TABLE {{s}}.tasks (
  task_id            bigserial PRIMARY KEY,
  workflow_id        text NOT NULL REFERENCES {{s}}.workflows ON DELETE CASCADE,
  step               integer NOT NULL,
  name               text NOT NULL,
  input              jsonb NOT NULL,
  options            jsonb NOT NULL,            -- the resolved retry policy and timeout
  status             text NOT NULL CHECK (status IN ('pending', 'running', 'completed', 'failed', 'cancelled')),
  attempt            integer NOT NULL DEFAULT 0,
  available_at       timestamptz NOT NULL,
  lease_token        bigint,
  lease_owner        text,
  claim_token        text,                      -- which claim took it: an in-doubt claim is recovered by it
  lease_until        timestamptz,
  attempt_started_at timestamptz,
  first_started_at   timestamptz,
  heartbeat          jsonb,                     -- the latest heartbeat details, for the next attempt
  idempotency_key    bytea,                     -- any bytes; results are reused per (name, key)
  result             jsonb,
  error_type         text,
  error_message      text,
  created_at         timestamptz NOT NULL DEFAULT now(),
  updated_at         timestamptz NOT NULL DEFAULT now(),
  UNIQUE (workflow_id, step)
);
CREATE INDEX tasks_available ON {{s}}.tasks (available_at) WHERE status = 'pending';
CREATE INDEX tasks_leased ON {{s}}.tasks (lease_until) WHERE status = 'running';

-- Committed results by (activity, idempotency key): reused by later tasks with the same key.
-- Not tied to workflows or tasks, so it outlives their history; expire it by created_at.
CREATE TABLE {{s}}.idempotent_results (
  activity          text NOT NULL,
  key               bytea NOT NULL,
  result            jsonb NOT NULL,
  input_fingerprint text NOT NULL,            -- md5 of the input that produced it
  workflow_id       text NOT NULL,
  task_id           bigint NOT NULL,
  created_at        timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (activity, key)
);

-- Which task may run the body for (activity, key) now; a holder that lost its lease is replaced.
CREATE TABLE {{s}}.idempotency_locks (
  activity    text NOT NULL,
  key         bytea NOT NULL,
  task_id     bigint NOT NULL,
  lease_token bigint NOT NULL,
  PRIMARY KEY (activity, key)
);

-- One row per run, kept when a workflow id is reused for a new run.
CREATE TABLE {{s}}.runs (
  run_id      uuid PRIMARY KEY,
  workflow_id text NOT NULL,
  name        text NOT NULL,
  status      text NOT NULL,
  started_at  timestamptz NOT NULL DEFAULT now(),
  ended_at    timestamptz
);
CREATE INDEX runs_by_workflow ON {{s}}.runs (workflow_id, started_at);

-- Every attempt's outcome, so a user can see why an activity retried.
CREATE TABLE {{s}}.attempts (
  task_id       bigint NOT NULL REFERENCES {{s}}.tasks ON DELETE CASCADE,
  attempt       integer NOT NULL,
  started_at    timestamptz,
  ended_at      timestamptz NOT NULL,
  outcome       text NOT NULL,
  error_type    text,
  error_message text,
  retry_at      timestamptz,                     -- when the next attempt was scheduled for
  PRIMARY KEY (task_id, attempt)
);
