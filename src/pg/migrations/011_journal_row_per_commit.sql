-- One journal row per commit. A row holds its first event in its columns and the events
-- committed with it in `more` (each [kind, step, name, data], at seq + 1, + 2, ...): a step's
-- completion and the next step's scheduling were two rows and two index entries, about a
-- tenth of a step's WAL (docs/benchmarks.md). A completed or failed activity event is always
-- a row's first event. Rows written before stay as they are (one event each). `journal_events`
-- reads the journal one event per row; `row_seq` is the seq of the row holding the event, for
-- ranges an index can serve. A task is found by its run and step (the primary key now): its
-- task_id, which attempts and idempotency rows still name, no longer has an index of its own
-- (one entry less per step); idempotency locks name their holder's run and step. Engines of
-- earlier versions must be stopped before this runs: they would not read the events in
-- `more`, and they find tasks by task_id.

ALTER TABLE {{s}}.journal ADD COLUMN more jsonb;
CREATE VIEW {{s}}.journal_events AS
SELECT j.run_id, j.seq, j.kind, j.step, j.name, j.data, j.created_at, j.seq AS row_seq FROM {{s}}.journal j
UNION ALL
SELECT j.run_id, j.seq + x.ord::int, x.e->>0, (x.e->>1)::int, x.e->>2, coalesce(x.e->3, '{}'), j.created_at, j.seq
FROM {{s}}.journal j CROSS JOIN LATERAL jsonb_array_elements(j.more) WITH ORDINALITY AS x(e, ord)
WHERE j.more IS NOT NULL;

ALTER TABLE {{s}}.idempotency_locks ADD COLUMN run_id uuid, ADD COLUMN step integer;
UPDATE {{s}}.idempotency_locks l SET run_id = t.run_id, step = t.step FROM {{s}}.tasks t WHERE t.task_id = l.task_id;
ALTER TABLE {{s}}.tasks DROP CONSTRAINT tasks_pkey, DROP CONSTRAINT tasks_run_step,
  ADD CONSTRAINT tasks_pkey PRIMARY KEY (run_id, step);
