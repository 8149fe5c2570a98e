-- Cron schedules. Every engine fires due ones under a row lock, so each nominal time fires once.

CREATE TABLE {{s}}.schedules (
  schedule_id      text PRIMARY KEY,
  workflow_name    text NOT NULL,
  input            jsonb NOT NULL,
  cron             text NOT NULL,
  time_zone        text NOT NULL,
  misfire_policy   text NOT NULL CHECK (misfire_policy IN ('skip', 'catchup', 'compress')),
  catchup_limit    integer NOT NULL CHECK (catchup_limit >= 0),
  misfire_grace_ms bigint NOT NULL CHECK (misfire_grace_ms >= 0),
  paused           boolean NOT NULL DEFAULT false,
  next_fire_at     timestamptz NOT NULL,      -- the next nominal fire time not yet handled
  prev_fire_at     timestamptz NOT NULL,      -- the cron time before it: where its window starts
  fires_started    bigint NOT NULL DEFAULT 0,
  fires_dropped    bigint NOT NULL DEFAULT 0, -- misfires skipped or beyond the catch-up limit
  revision         uuid NOT NULL,             -- set by each create/update: a retried create knows its own row
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX schedules_due ON {{s}}.schedules (next_fire_at) WHERE NOT paused;
