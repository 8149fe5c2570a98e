-- Flow control (docs/flow-control.md). Named queues keep their limits here, so every engine obeys
-- the same ones. A run started on a named queue waits `queued` (its code has not run) until an
-- engine admits it under the queue's advisory lock; an admitted run holds its place in the
-- queue's and its key's concurrency until it ends: the place is the run's own row (running, not
-- queued), so no grant can leak when an engine dies, and no counter row is written per run.
-- A queue's rate limits count its admissions in a log (`queue_admissions`) over a sliding window
-- on the database clock; entries older than the window are deleted as admissions go on.
-- Runs in flight are on the default queue, which has no limits: they upgrade in place.

CREATE TABLE {{s}}.queues (
  name            text PRIMARY KEY,
  concurrency     integer CHECK (concurrency > 0),      -- admitted runs of the queue, all engines together
  key_concurrency integer CHECK (key_concurrency > 0),  -- admitted runs per concurrency key
  rate_count      integer CHECK (rate_count > 0),       -- admissions of the queue per rate period
  rate_period_ms  bigint CHECK (rate_period_ms > 0),
  key_rate_count  integer CHECK (key_rate_count > 0),   -- admissions per concurrency key per period
  key_rate_period_ms bigint CHECK (key_rate_period_ms > 0),
  paused          boolean NOT NULL DEFAULT false,       -- admits nothing; admitted runs go on
  paused_at       timestamptz,
  paused_by       text,
  paused_reason   text,
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now()
);

ALTER TABLE {{s}}.workflows
  ADD COLUMN queue text NOT NULL DEFAULT 'default',
  ADD COLUMN concurrency_key text NOT NULL DEFAULT '',
  ADD COLUMN priority integer NOT NULL DEFAULT 0,
  ADD COLUMN queued boolean NOT NULL DEFAULT false,
  ADD COLUMN deduplication_key text,   -- one running run per key and queue
  ADD COLUMN debounce_key text,        -- starts with it collapse into the queued run that has it
  ADD COLUMN admit_after timestamptz;  -- a debounced run waits, queued, until this passes

-- Claims search per queue and workflow name; a queued run is never claimable.
DROP INDEX {{s}}.workflows_runnable_by_name;
DROP INDEX {{s}}.workflows_waking_by_name;
CREATE INDEX workflows_runnable_by_queue ON {{s}}.workflows (queue, name, runnable_since)
  WHERE status = 'running' AND runnable AND NOT queued;
CREATE INDEX workflows_waking_by_queue ON {{s}}.workflows (queue, name, wake_at)
  WHERE status = 'running' AND wake_at IS NOT NULL AND NOT queued;
-- Admission: the keys with queued runs, each key's next runs, and the admitted runs per key.
CREATE INDEX workflows_queued ON {{s}}.workflows (queue, concurrency_key, priority DESC, created_at)
  WHERE status = 'running' AND queued;
CREATE INDEX workflows_admitted ON {{s}}.workflows (queue, concurrency_key)
  WHERE status = 'running' AND NOT queued AND queue <> 'default';
CREATE INDEX workflows_cancelled_in_queue ON {{s}}.workflows (queue)
  WHERE status = 'running' AND queued AND cancel_requested_at IS NOT NULL;
-- Deduplication and debounce: one run per key while it runs (queued or admitted), and while it
-- is queued; the debounced runs' admission times.
CREATE UNIQUE INDEX workflows_deduplicated ON {{s}}.workflows (queue, deduplication_key)
  WHERE status = 'running' AND deduplication_key IS NOT NULL;
CREATE UNIQUE INDEX workflows_debounced ON {{s}}.workflows (queue, name, debounce_key)
  WHERE status = 'running' AND queued AND debounce_key IS NOT NULL;
CREATE INDEX workflows_admitted_after ON {{s}}.workflows (queue, admit_after)
  WHERE status = 'running' AND queued AND admit_after IS NOT NULL;

-- Admissions of queues with a rate limit, kept as long as a window may count them.
CREATE TABLE {{s}}.queue_admissions (
  queue           text NOT NULL,
  concurrency_key text NOT NULL,
  admitted_at     timestamptz NOT NULL,
  run_id          uuid NOT NULL
);
CREATE INDEX queue_admissions_by_queue ON {{s}}.queue_admissions (queue, admitted_at);
CREATE INDEX queue_admissions_by_key ON {{s}}.queue_admissions (queue, concurrency_key, admitted_at);
