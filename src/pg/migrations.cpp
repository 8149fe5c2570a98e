#include "pg/migrations.hpp"

#include <fmt/format.h>
#include "base/log.hpp"
#include "base/printable.hpp"

#include <algorithm>
#include <regex>

#include "base/checks.hpp"
#include "durable/errors.hpp"
#include "durable/schema.hpp"
#include "pg/connection_pool.hpp"

namespace durable::pg {

namespace {

// Each migration runs once, in its own transaction, in order. Never edit one that shipped:
// add the next. `{s}` is the quoted schema name.
const char* const migrations[] = {
    // 1: the journal, workflows, activity tasks and their attempts, and the clock.
    R"(
CREATE TABLE {s}.clock (
  id   boolean PRIMARY KEY DEFAULT true CHECK (id),
  skew interval NOT NULL DEFAULT interval '0'   -- only a test mode moves it (time skipping)
);
INSERT INTO {s}.clock DEFAULT VALUES;

-- The one clock every due time, lease and timer is judged by.
CREATE FUNCTION {s}.db_now() RETURNS timestamptz LANGUAGE sql STABLE
  AS $$ SELECT now() + skew FROM {s}.clock $$;
CREATE FUNCTION {s}.epoch_us(t timestamptz) RETURNS bigint LANGUAGE sql IMMUTABLE
  AS $$ SELECT (extract(epoch FROM t) * 1000000)::bigint $$;
CREATE FUNCTION {s}.from_us(us bigint) RETURNS timestamptz LANGUAGE sql IMMUTABLE
  AS $$ SELECT timestamptz 'epoch' + us * interval '1 microsecond' $$;

CREATE SEQUENCE {s}.lease_tokens;

CREATE TABLE {s}.workflows (
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
CREATE INDEX workflows_runnable ON {s}.workflows (updated_at) WHERE status = 'running' AND runnable;
CREATE INDEX workflows_waking ON {s}.workflows (wake_at) WHERE status = 'running' AND wake_at IS NOT NULL;

-- Append-only; (workflow_id, seq) keeps sequence numbers unique, next_seq keeps them gap-free.
CREATE TABLE {s}.journal (
  workflow_id text NOT NULL REFERENCES {s}.workflows ON DELETE CASCADE,
  seq         integer NOT NULL,
  kind        text NOT NULL,
  step        integer,
  name        text,
  data        jsonb NOT NULL DEFAULT '{{}}',
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (workflow_id, seq)
);

CREATE TABLE {s}.tasks (
  task_id            bigserial PRIMARY KEY,
  workflow_id        text NOT NULL REFERENCES {s}.workflows ON DELETE CASCADE,
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
CREATE INDEX tasks_available ON {s}.tasks (available_at) WHERE status = 'pending';
CREATE INDEX tasks_leased ON {s}.tasks (lease_until) WHERE status = 'running';

-- Committed results by (activity, idempotency key): reused by later tasks with the same key.
-- Not tied to workflows or tasks, so it outlives their history; expire it by created_at.
CREATE TABLE {s}.idempotent_results (
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
CREATE TABLE {s}.idempotency_locks (
  activity    text NOT NULL,
  key         bytea NOT NULL,
  task_id     bigint NOT NULL,
  lease_token bigint NOT NULL,
  PRIMARY KEY (activity, key)
);

-- One row per run, kept when a workflow id is reused for a new run.
CREATE TABLE {s}.runs (
  run_id      uuid PRIMARY KEY,
  workflow_id text NOT NULL,
  name        text NOT NULL,
  status      text NOT NULL,
  started_at  timestamptz NOT NULL DEFAULT now(),
  ended_at    timestamptz
);
CREATE INDEX runs_by_workflow ON {s}.runs (workflow_id, started_at);

-- Every attempt's outcome, so a user can see why an activity retried.
CREATE TABLE {s}.attempts (
  task_id       bigint NOT NULL REFERENCES {s}.tasks ON DELETE CASCADE,
  attempt       integer NOT NULL,
  started_at    timestamptz,
  ended_at      timestamptz NOT NULL,
  outcome       text NOT NULL,
  error_type    text,
  error_message text,
  retry_at      timestamptz,                     -- when the next attempt was scheduled for
  PRIMARY KEY (task_id, attempt)
);
)",
    // 2: cron schedules. Every engine fires due ones under a row lock, so each nominal time fires once.
    R"(
CREATE TABLE {s}.schedules (
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
CREATE INDEX schedules_due ON {s}.schedules (next_fire_at) WHERE NOT paused;
)",
    // 3: claims and the queue age find an activity's oldest waiting tasks without walking past
    // other activities' backlogs: the task indexes lead with the activity name.
    R"(
CREATE INDEX tasks_available_by_name ON {s}.tasks (name, available_at) WHERE status = 'pending';
CREATE INDEX tasks_leased_by_name ON {s}.tasks (name, lease_until) WHERE status = 'running';
DROP INDEX {s}.tasks_available;
DROP INDEX {s}.tasks_leased;
)",
    // 4: runnable workflows are claimed in the order they became runnable, not by updated_at,
    // which every step changes. With no indexed column changing, a step's update of its workflow
    // row is a HOT update (no new index entries), and the spare room per page makes that likely.
    // The time conversions are STABLE, as their bodies are (time zone arithmetic): declared
    // IMMUTABLE, PostgreSQL would not inline them and planned their bodies on every call.
    R"(
ALTER FUNCTION {s}.epoch_us(timestamptz) STABLE;
ALTER FUNCTION {s}.from_us(bigint) STABLE;
ALTER TABLE {s}.workflows ADD COLUMN runnable_since timestamptz NOT NULL DEFAULT now();
ALTER TABLE {s}.workflows SET (fillfactor = 80);
CREATE INDEX workflows_runnable_since ON {s}.workflows (runnable_since) WHERE status = 'running' AND runnable;
DROP INDEX {s}.workflows_runnable;
)",
    // 5: no foreign keys. The engine writes journal, task and attempt rows only in the statement
    // that holds the workflow's (or task's) lease and has just updated that row, so the keys
    // proved nothing, and each check cost a query per row on every step. The one delete that
    // relied on their cascade (a reused workflow id) deletes its rows itself.
    R"(
ALTER TABLE {s}.journal DROP CONSTRAINT journal_workflow_id_fkey;
ALTER TABLE {s}.tasks DROP CONSTRAINT tasks_workflow_id_fkey;
ALTER TABLE {s}.attempts DROP CONSTRAINT attempts_task_id_fkey;
)",
    // 6: runnable and waking workflows are found per workflow name, as tasks are per activity
    // name (3): a claim reads the head of its names' indexes, not every runnable workflow.
    R"(
CREATE INDEX workflows_runnable_by_name ON {s}.workflows (name, runnable_since) WHERE status = 'running' AND runnable;
CREATE INDEX workflows_waking_by_name ON {s}.workflows (name, wake_at) WHERE status = 'running' AND wake_at IS NOT NULL;
DROP INDEX {s}.workflows_runnable_since;
DROP INDEX {s}.workflows_waking;
)",
    // 7: a task that finds its idempotency key held waits, handed back, until the holder lets
    // go: it marks the lock row `waiting` in the statement that hands it back, so the holder's
    // release (which must lock that row) learns of it, and the waiters are found by (activity,
    // key) and made claimable at once instead of at a poll.
    R"(
ALTER TABLE {s}.idempotency_locks ADD COLUMN waiting boolean NOT NULL DEFAULT false;
CREATE INDEX tasks_waiting_for_key ON {s}.tasks (name, idempotency_key)
  WHERE status = 'pending' AND idempotency_key IS NOT NULL;
-- Lease tokens come from blocks reserved in synchronous commits (see src/pg/lease_tokens.hpp):
-- a sequence advanced in asynchronous claims can hand a token out twice after a crash. The
-- first block starts far above the sequence, whose tokens may still be held by runs in flight
-- and which engines of the previous version go on using until they are upgraded.
CREATE TABLE {s}.lease_token_blocks (
  only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
  next     bigint NOT NULL
);
INSERT INTO {s}.lease_token_blocks (next) SELECT last_value + (1::bigint << 40) FROM {s}.lease_tokens;
)",
    // 8: room on each page of tasks (as workflows got in 3), whose rows a step updates several
    // times (leased, finished): a new row version that stays on its page is logged as the bytes
    // that changed, not the whole row. Measured: 54 % of the non-HOT task updates went to another
    // page without it (docs/benchmarks.md). Pages written from now on keep the room.
    R"(
ALTER TABLE {s}.tasks SET (fillfactor = 80);
)",
    // 9: runs are first-class. A workflows row is one run (keyed by run id); a workflow id names
    // its runs, the latest marked `latest` (unique per id), so at most one of them is running. The
    // journal and tasks belong to a run, and a new run under an id keeps the earlier runs' history.
    // Each run records how it was started. Runs are listed newest first by the indexes below, and
    // operator actions go to `audit`. Engines of earlier versions must be stopped before this runs:
    // their statements address workflows by id alone.
    R"(
ALTER TABLE {s}.workflows
  ADD COLUMN latest boolean NOT NULL DEFAULT true,
  ADD COLUMN started_by text NOT NULL DEFAULT 'call'
    CHECK (started_by IN ('call', 'schedule', 'trigger', 'fork', 'child', 'continued')),
  ADD COLUMN origin text,                 -- the schedule id or trigger name that started it
  ADD COLUMN parent_run_id uuid,          -- the run that started it as a child
  ADD COLUMN forked_from_run uuid,        -- the run whose journal it copied ...
  ADD COLUMN forked_from_step integer;    -- ... up to (not including) this step
ALTER TABLE {s}.workflows DROP CONSTRAINT workflows_pkey, DROP CONSTRAINT workflows_run_id_key,
  ADD CONSTRAINT workflows_pkey PRIMARY KEY (run_id);
CREATE UNIQUE INDEX workflows_latest ON {s}.workflows (workflow_id) WHERE latest;
-- The runs of an id, and ids by prefix (byte order, so a prefix is a range).
CREATE INDEX workflows_by_id ON {s}.workflows ((workflow_id COLLATE "C"), created_at);
CREATE INDEX workflows_listed ON {s}.workflows (created_at, run_id);
CREATE INDEX workflows_listed_by_status ON {s}.workflows (status, created_at, run_id);
CREATE INDEX workflows_listed_by_name ON {s}.workflows (name, created_at, run_id);
CREATE INDEX workflows_listed_by_origin ON {s}.workflows (origin, created_at, run_id) WHERE origin IS NOT NULL;
CREATE INDEX workflows_children ON {s}.workflows (parent_run_id) WHERE parent_run_id IS NOT NULL;
CREATE INDEX workflows_ended ON {s}.workflows (ended_at) WHERE status <> 'running';

-- Earlier runs of reused ids, of which only a `runs` row was kept (their history was deleted).
INSERT INTO {s}.workflows (workflow_id, run_id, name, status, input, next_seq, runnable, latest, created_at,
                           updated_at, ended_at)
SELECT r.workflow_id, r.run_id, r.name, r.status, 'null', 0, false, false, r.started_at,
       coalesce(r.ended_at, r.started_at), r.ended_at
FROM {s}.runs r WHERE NOT EXISTS (SELECT 1 FROM {s}.workflows w WHERE w.run_id = r.run_id);
DROP TABLE {s}.runs;

-- Rows of no workflow (none are written; no reader could reach them) cannot be given a run.
ALTER TABLE {s}.journal ADD COLUMN run_id uuid;
UPDATE {s}.journal j SET run_id = w.run_id FROM {s}.workflows w WHERE w.workflow_id = j.workflow_id AND w.latest;
DELETE FROM {s}.journal WHERE run_id IS NULL;
ALTER TABLE {s}.journal ALTER COLUMN run_id SET NOT NULL, DROP CONSTRAINT journal_pkey,
  ADD CONSTRAINT journal_pkey PRIMARY KEY (run_id, seq);
-- Runs a schedule started say so in their start event. (Trigger-started runs cannot be told
-- from others by their rows: they stay 'call'.)
UPDATE {s}.workflows w SET started_by = 'schedule', origin = j.data->'schedule'->>'id'
FROM {s}.journal j WHERE j.run_id = w.run_id AND j.seq = 0 AND j.data ? 'schedule';

-- attempt_base: the attempts started before the run was last resumed (its retry policy counts
-- the attempts after it; attempts rows keep one numbering).
ALTER TABLE {s}.tasks ADD COLUMN run_id uuid, ADD COLUMN attempt_base integer NOT NULL DEFAULT 0;
UPDATE {s}.tasks t SET run_id = w.run_id FROM {s}.workflows w WHERE w.workflow_id = t.workflow_id AND w.latest;
DELETE FROM {s}.tasks WHERE run_id IS NULL;
ALTER TABLE {s}.tasks ALTER COLUMN run_id SET NOT NULL, DROP CONSTRAINT tasks_workflow_id_step_key,
  ADD CONSTRAINT tasks_run_step UNIQUE (run_id, step);

-- Every operator action: who (as the caller says), why, when, and what it touched.
CREATE TABLE {s}.audit (
  audit_id    bigserial PRIMARY KEY,
  at          timestamptz NOT NULL DEFAULT now(),
  actor       text NOT NULL,
  action      text NOT NULL,
  reason      text NOT NULL CHECK (reason <> ''),
  workflow_id text,
  run_id      uuid,
  details     jsonb NOT NULL DEFAULT '{{}}'
);
)",
    // 10: a completed activity's task row goes in the statement that journals its outcome: the
    // journal says everything it did (its scheduled event carries the input and options, its
    // completed event the attempt's start), and an update of the row, which leaves its page with
    // new entries in every index, was about a fifth of a step's WAL (docs/benchmarks.md). Failed
    // and dropped tasks stay (a resume runs them again). Attempts are found by run, as their task
    // may be gone. Journal rows no longer repeat the workflow id (their run has it). Engines of
    // earlier versions must be stopped before this runs: they read options in full and write
    // attempts without their run.
    R"(
ALTER TABLE {s}.journal ALTER COLUMN workflow_id DROP NOT NULL;
ALTER TABLE {s}.attempts ADD COLUMN run_id uuid, ADD COLUMN step integer;
UPDATE {s}.attempts a SET run_id = t.run_id, step = t.step FROM {s}.tasks t WHERE t.task_id = a.task_id;
DELETE FROM {s}.attempts WHERE run_id IS NULL;  -- of no task: no reader could reach them
ALTER TABLE {s}.attempts ALTER COLUMN run_id SET NOT NULL, ALTER COLUMN step SET NOT NULL;
CREATE INDEX attempts_of_run ON {s}.attempts (run_id, step);
UPDATE {s}.journal j SET data = j.data || jsonb_build_object('input', t.input, 'options', t.options)
FROM {s}.tasks t
WHERE j.kind = 'activity_scheduled' AND t.run_id = j.run_id AND t.step = j.step AND NOT j.data ? 'input';
UPDATE {s}.journal j SET data = j.data || jsonb_build_object('started_us', {s}.epoch_us(t.attempt_started_at))
FROM {s}.tasks t
WHERE j.kind = 'activity_completed' AND t.run_id = j.run_id AND t.step = j.step AND t.status = 'completed'
  AND t.attempt_started_at IS NOT NULL;
DELETE FROM {s}.tasks WHERE status = 'completed';
)",
    // 11: one journal row per commit. A row holds its first event in its columns and the events
    // committed with it in `more` (each [kind, step, name, data], at seq + 1, + 2, ...): a step's
    // completion and the next step's scheduling were two rows and two index entries, about a
    // tenth of a step's WAL (docs/benchmarks.md). A completed or failed activity event is always
    // a row's first event. Rows written before stay as they are (one event each). `journal_events`
    // reads the journal one event per row; `row_seq` is the seq of the row holding the event, for
    // ranges an index can serve. A task is found by its run and step (the primary key now): its
    // task_id, which attempts and idempotency rows still name, no longer has an index of its own
    // (one entry less per step); idempotency locks name their holder's run and step. Engines of
    // earlier versions must be stopped before this runs: they would not read the events in
    // `more`, and they find tasks by task_id.
    R"(
ALTER TABLE {s}.journal ADD COLUMN more jsonb;
CREATE VIEW {s}.journal_events AS
SELECT j.run_id, j.seq, j.kind, j.step, j.name, j.data, j.created_at, j.seq AS row_seq FROM {s}.journal j
UNION ALL
SELECT j.run_id, j.seq + x.ord::int, x.e->>0, (x.e->>1)::int, x.e->>2, coalesce(x.e->3, '{{}}'), j.created_at, j.seq
FROM {s}.journal j CROSS JOIN LATERAL jsonb_array_elements(j.more) WITH ORDINALITY AS x(e, ord)
WHERE j.more IS NOT NULL;

ALTER TABLE {s}.idempotency_locks ADD COLUMN run_id uuid, ADD COLUMN step integer;
UPDATE {s}.idempotency_locks l SET run_id = t.run_id, step = t.step FROM {s}.tasks t WHERE t.task_id = l.task_id;
ALTER TABLE {s}.tasks DROP CONSTRAINT tasks_pkey, DROP CONSTRAINT tasks_run_step,
  ADD CONSTRAINT tasks_pkey PRIMARY KEY (run_id, step);
)",
    // 12: messages and published events. Each run has an inbox: a message is a row the moment it is sent, numbered per
    // run in send order (workflows.messages_sent counts them, under the run's row lock), until a
    // replay's commit marks it received at a step of the journal. Adding a column with a constant
    // default rewrites nothing, so runs in flight upgrade in place. `events` holds the latest
    // value a run published under each key (WorkflowContext::set_event).
    R"(
ALTER TABLE {s}.workflows ADD COLUMN messages_sent integer NOT NULL DEFAULT 0;
CREATE TABLE {s}.messages (
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
CREATE INDEX messages_unreceived ON {s}.messages (run_id, topic, seq) WHERE received_step IS NULL;
CREATE UNIQUE INDEX messages_idempotency ON {s}.messages (run_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE TABLE {s}.events (
  run_id  uuid NOT NULL,
  key     text NOT NULL,
  value   jsonb NOT NULL,
  step    integer NOT NULL,
  set_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (run_id, key)
);
)",
    // 13: child workflows and cancel requests. A cancel of a run is asked for (cancel_requested_at, and
    // a cancel_requested event in its journal, which its code sees). A child is a run with its parent's run and the step that started it
    // (inserted by the parent's replay commit), and what becomes of it when the parent ends. When a
    // child ends, the database itself journals that in its parent, once (`parent_told`), under
    // the parent's row lock, and makes the parent runnable: every way a run ends (a replay, a
    // cancel, an operator) goes through the status column. A replay commit that finds a child id
    // taken since the replay read it is refused with SQLSTATE DUR01 and decided again. Nullable
    // columns and a constant default rewrite nothing: runs in flight upgrade in place.
    R"(
ALTER TABLE {s}.workflows
  ADD COLUMN parent_step integer,
  ADD COLUMN parent_close text CHECK (parent_close IN ('cancel', 'abandon')),
  ADD COLUMN parent_told boolean NOT NULL DEFAULT false,
  ADD COLUMN cancel_requested_at timestamptz;
CREATE INDEX workflows_running_children ON {s}.workflows (parent_run_id)
  WHERE status = 'running' AND parent_close = 'cancel' AND cancel_requested_at IS NULL;

CREATE FUNCTION {s}.refuse_commit(reason text) RETURNS integer LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION USING ERRCODE = 'DUR01', MESSAGE = reason;
END $$;

CREATE FUNCTION {s}.tell_parent() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  at_seq integer;
BEGIN
  UPDATE {s}.workflows
  SET next_seq = next_seq + 1, runnable = true,
      runnable_since = CASE WHEN runnable THEN runnable_since ELSE now() END, updated_at = now()
  WHERE run_id = NEW.parent_run_id AND status = 'running'
  RETURNING next_seq - 1 INTO at_seq;
  IF at_seq IS NOT NULL THEN
    INSERT INTO {s}.journal (run_id, seq, kind, step, name, data)
    VALUES (NEW.parent_run_id, at_seq, CASE WHEN NEW.status = 'completed' THEN 'child_completed' ELSE 'child_failed' END,
            NEW.parent_step, NEW.name,
            CASE WHEN NEW.status = 'completed' THEN jsonb_build_object('result', NEW.result)
                 ELSE jsonb_build_object(
                   'status', NEW.status,
                   'error_type', coalesce(NEW.error_type,
                                          CASE WHEN NEW.status = 'cancelled' THEN 'durable::WorkflowCancelled' END, ''),
                   'error_message', coalesce(NEW.error_message,
                                             CASE WHEN NEW.status = 'cancelled' THEN 'the child run was cancelled' END,
                                             '')) END);
    PERFORM pg_notify('durable_w_' || TG_TABLE_SCHEMA, '');
  END IF;
  NEW.parent_told := true;
  RETURN NEW;
END $$;
CREATE TRIGGER tell_parent BEFORE UPDATE OF status ON {s}.workflows FOR EACH ROW
  WHEN (OLD.status = 'running' AND NEW.status <> 'running' AND NEW.parent_run_id IS NOT NULL AND NOT OLD.parent_told)
  EXECUTE FUNCTION {s}.tell_parent();
)",
    // 14: continue-as-new. A run ends `continued` (its result names the next run) and the next run
    // of its id starts in the same transaction, recording the run it continued. A continued run has
    // not ended for its parent: the last run of the chain tells it. The constraint is checked
    // against the rows there are (no rewrite); runs in flight upgrade in place.
    R"(
ALTER TABLE {s}.workflows ADD COLUMN continued_from uuid,
  DROP CONSTRAINT workflows_status_check,
  ADD CONSTRAINT workflows_status_check CHECK (status IN ('running', 'completed', 'failed', 'cancelled', 'continued'));
DROP TRIGGER tell_parent ON {s}.workflows;
CREATE TRIGGER tell_parent BEFORE UPDATE OF status ON {s}.workflows FOR EACH ROW
  WHEN (OLD.status = 'running' AND NEW.status IN ('completed', 'failed', 'cancelled') AND NEW.parent_run_id IS NOT NULL
        AND NOT OLD.parent_told)
  EXECUTE FUNCTION {s}.tell_parent();
)",
    // 15: versioning. A run records the app version of the engine that started it, then of each
    // that committed a replay of it (NULL: unversioned). A run whose code no longer replays its
    // journal is blocked, not failed (EngineOptions::on_nondeterminism): it stays running with
    // `blocked_at` and `blocked` (the divergence, the versions that blocked it since it last made
    // progress, how many times), due again later by `wake_at`; the next commit of a replay clears
    // them. The index finds blocked runs for the sweep that wakes them for engines of another
    // version, and for the gauge. `next_seq - replay_lag` is the journal length the last committed
    // replay had read: outcomes journaled from there on are news to the code, and what it logs
    // after one is written (WorkflowContext::logger). Kept as a lag, not a length: a step that
    // continues in place leaves it as it was (one event behind), and a column that changed at
    // every step, the row's last, would have cost the WAL record of each step's update its shared
    // suffix (about 70 bytes). Every statement that appends to a journal adds to it; a new run's 1
    // says no replay was committed. Nullable columns and a constant default rewrite nothing: runs
    // in flight upgrade in place (their next replay logs as their first would).
    R"(
ALTER TABLE {s}.workflows ADD COLUMN app_version text, ADD COLUMN blocked_at timestamptz, ADD COLUMN blocked jsonb,
  ADD COLUMN replay_lag integer NOT NULL DEFAULT 1;
CREATE INDEX workflows_blocked ON {s}.workflows (name, blocked_at) WHERE status = 'running' AND blocked_at IS NOT NULL;
CREATE OR REPLACE FUNCTION {s}.tell_parent() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  at_seq integer;
BEGIN
  UPDATE {s}.workflows
  SET next_seq = next_seq + 1, replay_lag = replay_lag + 1, runnable = true,
      runnable_since = CASE WHEN runnable THEN runnable_since ELSE now() END, updated_at = now()
  WHERE run_id = NEW.parent_run_id AND status = 'running'
  RETURNING next_seq - 1 INTO at_seq;
  IF at_seq IS NOT NULL THEN
    INSERT INTO {s}.journal (run_id, seq, kind, step, name, data)
    VALUES (NEW.parent_run_id, at_seq, CASE WHEN NEW.status = 'completed' THEN 'child_completed' ELSE 'child_failed' END,
            NEW.parent_step, NEW.name,
            CASE WHEN NEW.status = 'completed' THEN jsonb_build_object('result', NEW.result)
                 ELSE jsonb_build_object(
                   'status', NEW.status,
                   'error_type', coalesce(NEW.error_type,
                                          CASE WHEN NEW.status = 'cancelled' THEN 'durable::WorkflowCancelled' END, ''),
                   'error_message', coalesce(NEW.error_message,
                                             CASE WHEN NEW.status = 'cancelled' THEN 'the child run was cancelled' END,
                                             '')) END);
    PERFORM pg_notify('durable_w_' || TG_TABLE_SCHEMA, '');
  END IF;
  NEW.parent_told := true;
  RETURN NEW;
END $$;
)",
    // 16: the engines a schema has, for the operator's view (Runs::stats, `durable stats`): each
    // started engine says so, says again every few poll intervals that it is alive, and takes its
    // row away as it stops. An engine that died leaves its row until it expires (then the next
    // engine to start or look removes it an hour later). A new table: nothing in flight changes.
    R"(
CREATE TABLE {s}.engines (
  owner             text PRIMARY KEY,        -- instance@host:pid, as leases name it
  instance          text NOT NULL,
  app_version       text,
  activity_capacity integer NOT NULL,        -- its activity slots (0: it runs no activities)
  workflow_capacity integer NOT NULL,        -- its runners (0: it runs no workflows)
  started_at        timestamptz NOT NULL DEFAULT now(),
  seen_at           timestamptz NOT NULL DEFAULT now(),
  expires_at        timestamptz NOT NULL     -- it says it is alive again before this
);
)",
    // 17: transactional activities (durable/pqxx.hpp). A body's transaction inserts a guard row
    // first; a deferred constraint trigger refuses to commit a transaction that still has its guard
    // (SQLSTATE DUR02), and only durable's completion of the step takes it away, in the same
    // transaction. So the body's writes commit with its journaled result or not at all, even when
    // the body itself runs COMMIT. Unlogged: a guard never outlives its transaction. The defaults
    // of the times rows are written at become statement_timestamp(): the same for a statement of
    // its own, but a step that commits at the end of a body's transaction is written then, not
    // when the transaction began. A new table and new defaults: runs in flight upgrade in place.
    R"(
CREATE UNLOGGED TABLE {s}.transaction_guards (xact xid8 PRIMARY KEY);
CREATE FUNCTION {s}.refuse_unguarded_commit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM {s}.transaction_guards WHERE xact = NEW.xact) THEN
    RAISE EXCEPTION USING ERRCODE = 'DUR02',
      MESSAGE = 'durable: a transactional activity''s transaction was committed by its body',
      HINT = 'return from the body instead: durable commits its writes together with its result';
  END IF;
  RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER commit_with_step AFTER INSERT ON {s}.transaction_guards
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION {s}.refuse_unguarded_commit();
ALTER TABLE {s}.workflows ALTER COLUMN created_at SET DEFAULT statement_timestamp(),
  ALTER COLUMN updated_at SET DEFAULT statement_timestamp(),
  ALTER COLUMN runnable_since SET DEFAULT statement_timestamp();
ALTER TABLE {s}.journal ALTER COLUMN created_at SET DEFAULT statement_timestamp();
ALTER TABLE {s}.tasks ALTER COLUMN created_at SET DEFAULT statement_timestamp(),
  ALTER COLUMN updated_at SET DEFAULT statement_timestamp();
ALTER TABLE {s}.idempotent_results ALTER COLUMN created_at SET DEFAULT statement_timestamp();
)",
    // 18: an idempotency lock says itself until when it is held (`held_until`): its holder's
    // lease, moved by the holder's heartbeats. Judged from the holder's task row instead, a lock
    // taker's snapshot could show that row from before the holder's claim, and take the lock from
    // a live holder. And a key is held by the body, not the task: a body that runs on after its
    // task let go of the key (an attempt failed by its timeout, a task dropped by its run's end or
    // cancel, a task handed back at shutdown) keeps the lock (`outlives_task`), renewed by its
    // engine until the body returns, when the engine deletes it; a dead engine's hold runs out.
    // Locks in flight keep NULL, judged by their holder's lease as before: they upgrade in place.
    R"(
ALTER TABLE {s}.idempotency_locks ADD COLUMN held_until timestamptz,
  ADD COLUMN outlives_task boolean NOT NULL DEFAULT false;
)",
};

}  // namespace

int latest_schema_version() { return static_cast<int>(std::size(migrations)); }

void validate_schema_name(const std::string& schema) {
  static const std::regex allowed("[a-z_][a-z0-9_]{0,47}");
  if (!std::regex_match(schema, allowed)) {
    throw InvalidSchemaName(
        fmt::format("schema name '{}' is not allowed: use 1 to 48 characters of lowercase letters, digits and "
                    "underscores, not starting with a digit (e.g. \"durable\" or \"orders_prod\")",
                    detail::printable(schema)));
  }
}

int schema_version_of(pqxx::connection& conn, const std::string& schema) {
  validate_schema_name(schema);
  pqxx::nontransaction tx(conn);
  const bool exists =
      tx.exec_params1("SELECT to_regclass($1) IS NOT NULL", quoted(schema) + ".schema_version")[0].as<bool>();
  // built SQL: the schema name, an identifier (validate_schema_name); the table may not exist yet
  return exists ? tx.exec1(fmt::format("SELECT coalesce(max(version), 0) FROM {}.schema_version", quoted(schema)))[0]
                      .as<int>()
                : 0;
}

void check_schema_version(pqxx::connection& conn, const std::string& schema) {
  const int version = schema_version_of(conn, schema);
  if (version != latest_schema_version()) {
    throw DatabaseError(fmt::format(
        "schema '{}' is at version {} but this build reads version {}: {}", schema, version, latest_schema_version(),
        version < latest_schema_version()
            ? "migrate it first (`durable migrate`, or start an engine of this build with migrate_schema on)"
            : "use a build of durable as new as the engines on it"));
  }
}

int migrate(pqxx::connection& conn, const std::string& schema, int up_to) {
  if (up_to < 0) up_to = latest_schema_version();
  validate_schema_name(schema);
  const std::string s = quoted(schema);
  // A session-level advisory lock, keyed by schema: concurrent starters wait here in turn.
  auto advisory = [&](const char* function) {
    pqxx::nontransaction tx(conn);
    // built SQL: one of two fixed function names; the schema is bound
    tx.exec_params(fmt::format("SELECT {}(hashtextextended('durable.migrate:' || $1, 0))", function), schema);
  };
  advisory("pg_advisory_lock");
  int version = 0;
  try {
    {
      pqxx::nontransaction tx(conn);
      // built SQL: DDL and reads of the schema name, an identifier (validate_schema_name), before
      // the schema exists (no statement can be prepared on it yet)
      tx.exec0(fmt::format("CREATE SCHEMA IF NOT EXISTS {}", s));
      tx.exec0(
          fmt::format("CREATE TABLE IF NOT EXISTS {}.schema_version (version integer PRIMARY KEY, "
                      "applied_at timestamptz NOT NULL DEFAULT now())",
                      s));
      // built SQL: as above
      version = tx.exec1(fmt::format("SELECT coalesce(max(version), 0) FROM {}.schema_version", s))[0].as<int>();
    }
    for (int next = version + 1; next <= std::min(up_to, latest_schema_version()); ++next) {
      pqxx::work tx(conn);
      // built SQL: a migration's DDL, the schema name put in (an identifier)
      tx.exec0(fmt::format(fmt::runtime(migrations[next - 1]), fmt::arg("s", s)));
      tx.exec_params0(fmt::format("INSERT INTO {}.schema_version (version) VALUES ($1)", s), next);
      tx.commit();
      detail::logger().info("schema '{}' migrated to version {}", schema, next);
      version = next;
    }
  } catch (...) {
    try {
      advisory("pg_advisory_unlock");
    } catch (...) {  // a lost connection released the lock already
    }
    throw;
  }
  advisory("pg_advisory_unlock");
  if (version > latest_schema_version()) {
    throw DatabaseError(fmt::format("schema '{}' is at version {}, newer than this build knows ({}): upgrade durable",
                                    schema, version, latest_schema_version()));
  }
  return version;
}

}  // namespace durable::pg

namespace durable {

namespace {

// One session for an administrative read or write: a server that cannot be reached is
// DatabaseUnavailable at once (no retries: an operator or a deploy script is waiting), any other
// refusal DatabaseRefused.
template <typename Work>
auto with_session(const std::string& database_url, const std::string& schema, Work work) {
  pg::validate_schema_name(schema);
  const std::string url = detail::database_url_or_env(database_url, "the database URL");
  pg::check_conninfo(url, "the database URL");
  try {
    pqxx::connection conn(url);
    return work(conn);
  } catch (const pqxx::broken_connection& e) {
    throw DatabaseUnavailable(fmt::format("cannot reach the database: {}", detail::printable(e.what())));
  } catch (const pqxx::sql_error& e) {
    throw pg::refused(e);
  }
}

}  // namespace

int latest_schema_version() { return pg::latest_schema_version(); }

SchemaVersion schema_version(const std::string& database_url, const std::string& schema) {
  return with_session(database_url, schema, [&](pqxx::connection& conn) {
    return SchemaVersion{pg::schema_version_of(conn, schema), pg::latest_schema_version()};
  });
}

int migrate_schema(const std::string& database_url, const std::string& schema) {
  return with_session(database_url, schema, [&](pqxx::connection& conn) { return pg::migrate(conn, schema); });
}

}  // namespace durable
