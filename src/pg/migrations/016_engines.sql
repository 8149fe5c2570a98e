-- The engines a schema has, for the operator's view (Runs::stats, `durable stats`): each
-- started engine says so, says again every few poll intervals that it is alive, and takes its
-- row away as it stops. An engine that died leaves its row until it expires (then the next
-- engine to start or look removes it an hour later). A new table: nothing in flight changes.

CREATE TABLE {{s}}.engines (
  owner             text PRIMARY KEY,        -- instance@host:pid, as leases name it
  instance          text NOT NULL,
  app_version       text,
  activity_capacity integer NOT NULL,        -- its activity slots (0: it runs no activities)
  workflow_capacity integer NOT NULL,        -- its runners (0: it runs no workflows)
  started_at        timestamptz NOT NULL DEFAULT now(),
  seen_at           timestamptz NOT NULL DEFAULT now(),
  expires_at        timestamptz NOT NULL     -- it says it is alive again before this
);
