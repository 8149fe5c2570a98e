#include "pg/statements.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "pg/connection_pool.hpp"
#include "pg/records.hpp"

namespace durable::pg {

std::string wake_channel(const std::string& schema, Wake kind) {
  switch (kind) {
    case Wake::workflows: return "durable_w_" + schema;
    case Wake::tasks: return "durable_t_" + schema;
    case Wake::ended: return "durable_e_" + schema;
    case Wake::schedules: return "durable_s_" + schema;
    case Wake::events: return "durable_v_" + schema;
  }
  return {};
}

namespace {

// Fragments shared by several statements (formatted with {s} and {now} first).

// Inserts the new tasks (json array `{tasks}`) of each workflow in CTE `{from}`. Tasks marked
// "claim" are leased at once to owner `{owner}` with claim token `{token}` and their own
// "lease_token" (run at once by this engine); those marked "dropped" (their run ended without
// awaiting them) are written cancelled; the others wait, pending, for any dispatcher.
const char* const insert_tasks_sql = R"(
  INSERT INTO {s}.tasks (run_id, workflow_id, step, name, input, options, idempotency_key, status, available_at,
                         attempt, lease_token, lease_owner, claim_token, attempt_started_at, first_started_at,
                         lease_until)
  SELECT f.run_id, f.workflow_id, (y.v->>'step')::int, y.v->>'name', y.v->'input', y.v->'options',
         decode(y.v->'options'->>'idempotency_key_hex', 'hex'),
         CASE WHEN c.claim THEN 'running' WHEN (y.v->>'dropped')::boolean THEN 'cancelled' ELSE 'pending' END,
         {now}, CASE WHEN c.claim THEN 1 ELSE 0 END, CASE WHEN c.claim THEN (y.v->>'lease_token')::bigint END,
         CASE WHEN c.claim THEN {owner} END, CASE WHEN c.claim THEN {token} END, CASE WHEN c.claim THEN {now} END,
         CASE WHEN c.claim THEN {now} END,
         CASE WHEN c.claim THEN {now} + (coalesce((y.v->'options'->>'timeout_ms')::bigint, {default_timeout_ms}) + {margin}::bigint) * interval '1 millisecond' END
  FROM {from} f, jsonb_array_elements({tasks}) AS y(v),
       LATERAL (SELECT coalesce((y.v->>'claim')::boolean, false) AS claim) AS c
  RETURNING run_id, task_id, step, lease_token, status)";

// The tasks of run `{run}` in CTE `{from}` that were leased at once, as a json array.
const char* const claimed_json_sql =
    R"((SELECT coalesce(jsonb_agg(jsonb_build_array(task_id, step, lease_token)), '[]')::text
   FROM {from} WHERE status = 'running' AND run_id = {run}))";

// A run that ended drops the tasks it never awaited: pending ones are not run, running ones see
// cancelled() at their next heartbeat and their outcomes are fenced off. For the runs in CTE
// `{from}` whose new status is `{status}`, all but the task `{except}` finishing with it.
const char* const drop_unawaited_sql = R"(
  UPDATE {s}.tasks o SET status = 'cancelled', updated_at = statement_timestamp()
  FROM {from} f
  WHERE {status} <> 'running' AND o.run_id = f.run_id AND o.status IN ('pending', 'running')
    AND o.task_id IS DISTINCT FROM {except})";

// Cancels the running runs of CTE `{from}` (a run_id column): each journals workflow_cancelled
// with data `{data}` and drops its tasks; `{channel}` is notified when any was cancelled. CTEs w,
// e, t and n: the statement's SELECT counts w (workflow_id, run_id of each cancelled run).
const char* const cancel_runs_sql = R"(w AS (
  UPDATE {s}.workflows o
  SET status = 'cancelled', runnable = false, next_seq = o.next_seq + 1, replay_lag = o.replay_lag + 1, lease_token = NULL,
      lease_owner = NULL, lease_until = NULL, updated_at = statement_timestamp(), ended_at = statement_timestamp()
  FROM {from} f WHERE o.run_id = f.run_id AND (o.status = 'running') IS TRUE
  RETURNING o.workflow_id, o.next_seq - 1 AS seq, o.run_id),
e AS (
  INSERT INTO {s}.journal (run_id, seq, kind, data) SELECT run_id, seq, 'workflow_cancelled', {data} FROM w),
t AS (
  UPDATE {s}.tasks k SET status = 'cancelled', updated_at = statement_timestamp()
  FROM w WHERE k.run_id = w.run_id AND k.status IN ('pending', 'running')),
n AS (SELECT pg_notify({channel}, '') WHERE EXISTS (SELECT 1 FROM w)))";

// Asks the running runs of CTE `{from}` (a run_id column) to cancel, unless they were asked
// already: each gets a cancel_requested event with reason `{reason}` (its code sees it at its
// next replay) and is made runnable; `{channel}` (workflows) is notified. CTEs {p}w, {p}e and
// {p}n: the statement's SELECT reads {p}w (workflow_id, run_id of each run asked) and {p}n.
const char* const request_cancel_sql = R"({p}w AS (
  UPDATE {s}.workflows o
  SET next_seq = o.next_seq + 1, replay_lag = o.replay_lag + 1, cancel_requested_at = statement_timestamp(), runnable = true,
      runnable_since = CASE WHEN o.runnable THEN o.runnable_since ELSE statement_timestamp() END, updated_at = statement_timestamp()
  FROM {from} f WHERE o.run_id = f.run_id AND (o.status = 'running') IS TRUE AND o.cancel_requested_at IS NULL
  RETURNING o.workflow_id, o.next_seq - 1 AS seq, o.run_id),
{p}e AS (
  INSERT INTO {s}.journal (run_id, seq, kind, data)
  SELECT run_id, seq, 'cancel_requested', jsonb_build_object('reason', {reason}) FROM {p}w),
{p}n AS (SELECT pg_notify({channel}, '') WHERE EXISTS (SELECT 1 FROM {p}w)))";

// In children's cancellation: a running child `c` with the cancel policy, not asked to cancel
// yet, whose parent is not running (ended, or deleted).
const char* const orphan_sql = R"(c.status = 'running' AND c.parent_close = 'cancel' AND c.cancel_requested_at IS NULL
    AND NOT EXISTS (SELECT 1 FROM {s}.workflows p WHERE p.run_id = c.parent_run_id AND p.status = 'running'))";

// The events of json array `{events}` after its first `{skip}`, as a journal row's `more` column
// (each [kind, step, name, data]; NULL when there are none): committed with the row's first event.
const char* const more_events_sql = R"((SELECT jsonb_agg(jsonb_build_array(x.v->'kind', x.v->'step', x.v->'name',
                                      coalesce(x.v->'data', '{{}}')) ORDER BY x.ord)
   FROM jsonb_array_elements({events}) WITH ORDINALITY AS x(v, ord) WHERE x.ord > {skip}))";

// The workflow_started event's data of claimed workflow `w` when that event is its whole journal.
const char* const start_data_sql = R"(CASE WHEN w.next_seq = 1 THEN
   (SELECT data::text FROM {s}.journal j WHERE j.run_id = w.run_id AND j.seq = 0) END AS start_data)";

// Claims only take leases: losing one in a server crash equals its lease running out, and every
// later write is fenced. So a claim's transaction need not wait for the WAL flush; set by the
// claim itself, in the rows it returns (a claim that took nothing writes nothing to flush).
const char* const async_commit_sql = "set_config('synchronous_commit', 'off', true) AS async_commit";

// In lock_key's ON CONFLICT: the existing lock row (its latest version, locked by the statement)
// is held until its own held_until: its holder's lease (moved by the holder's heartbeats), or a
// hold its engine renews while the body runs on after its task let go (timed out, dropped,
// handed back). Judged by the row alone, never by the holder's task row, which this statement's
// snapshot may show from before the holder was claimed (two bodies ran so under load). A row
// from before version 18 (held_until NULL) is judged by its holder's lease, as it was then.
const char* const holder_live_sql = R"((idempotency_locks.held_until >= {now} OR (idempotency_locks.held_until IS NULL
    AND EXISTS (
      SELECT 1 FROM {s}.tasks x
      WHERE x.run_id = idempotency_locks.run_id AND x.step = idempotency_locks.step
        AND x.lease_token = idempotency_locks.lease_token AND x.status = 'running' AND x.lease_until >= {now}
        AND NOT (x.run_id = $1::uuid AND x.step = $3)))))";

// A workflow row `wf` that step `t` may continue in place: journal as long as the replay assumed,
// the same run, and no live replay lease.
const char* const fast_sql = R"((wf.next_seq = t.expected_seq AND wf.run_id = t.replay_run
        AND wf.next_seq - wf.replay_lag = t.replayed_seq AND (wf.lease_until IS NULL OR wf.lease_until < {now})))";

// In complete_steps: task `k` is finished by input row `i` under a live lease. The test is one
// CASE so that no index on running tasks matches it: each row is found by primary key (its run
// and step), not by walking every running task (the plan is made once, when the statistics may
// say there are none).
const char* const finishing_task_sql = R"(k.run_id = i.task_run AND k.step = i.step AND k.lease_token = i.lease_token
    AND CASE WHEN k.status = 'running' THEN k.lease_until >= {now} ELSE false END)";

// What complete_steps goes on with of each task it finished (deleted or marked failed).
const char* const finished_task_sql = R"(k.task_id, k.lease_token, k.run_id, k.workflow_id, k.step, k.name,
    k.attempt - CASE WHEN i.record THEN 0 ELSE 1 END AS attempt,  -- a lost lease's claim ran nothing
    k.attempt_started_at, k.idempotency_key,
    CASE WHEN k.idempotency_key IS NOT NULL THEN coalesce(i.fp, md5(k.input::text)) END AS fp, i.outcome, i.result,
    i.error_type, i.error_message, i.record, i.expected_seq, i.replayed_seq, i.run_id AS replay_run, i.claim_token, i.events, i.tasks,
    i.wf_status, i.wf_result, i.wf_error_type, i.wf_error_message, i.wake_at_us)";

// What a claim may take, per name `n.name` of a json array of names; the queue-age gauges read
// the same, so they measure what a claim would find.
const char* const claimable_pending_task_sql = "status = 'pending' AND name = n.name AND available_at <= {now}";
const char* const claimable_expired_task_sql = "status = 'running' AND name = n.name AND lease_until < {now}";
const char* const claimable_runnable_workflow_sql =
    "status = 'running' AND runnable AND name = n.name AND (lease_until IS NULL OR lease_until < {now})";
const char* const claimable_waking_workflow_sql =
    "status = 'running' AND wake_at <= {now} AND NOT runnable AND name = n.name AND (lease_until IS NULL OR "
    "lease_until < {now})";

// A run found by its run id is tested for `(status = 'running') IS TRUE`, a form no index
// matches: a prepared statement keeps the plan it made while the tables were small, and such a
// plan found the run by walking every running run's entry in workflows_listed_by_status (a test
// in metrics_pgtest.cpp grows the tables under a running engine).
//
// `{s}` is the quoted schema; every value is a bound parameter. Times cross the wire as
// microseconds since the epoch, durations as milliseconds. `{now}` is the one clock, the
// database's (plus the test offset), read once per statement (with_clock below).
const std::pair<const char*, const char*> statements[] = {
    // The latest run of id $1 unless the id has one already (retire_run first to replace it).
    // $1 id, $2 run id, $3 name, $4 input, $5 channel, $6 more data for the started event,
    // $7 owner to lease the new run to at once ('' for none: any runner claims it), $8 lease ms,
    // $9 its lease token, $10 started by (call, schedule, trigger), $11 the schedule or trigger ('' none),
    // $12 the starting engine's app version ('' none)
    {stmt::start_workflow, R"(
WITH w AS (
  INSERT INTO {s}.workflows (workflow_id, run_id, name, status, input, next_seq, runnable, lease_token, lease_owner,
                             lease_until, started_by, origin, app_version)
  VALUES ($1, $2::uuid, $3, 'running', $4::jsonb, 1, true, CASE WHEN $7 <> '' THEN $9::bigint END,
          nullif($7, ''), CASE WHEN $7 <> '' THEN {now} + $8::bigint * interval '1 millisecond' END, $10,
          nullif($11, ''), nullif($12, ''))
  ON CONFLICT (workflow_id) WHERE latest DO NOTHING
  RETURNING workflow_id, run_id, lease_token),
e AS (
  INSERT INTO {s}.journal (run_id, seq, kind, data)
  SELECT run_id, 0, 'workflow_started', jsonb_build_object('input', $4::jsonb) || $6::jsonb FROM w),
n AS (SELECT pg_notify($5, '') FROM w WHERE lease_token IS NULL)
SELECT (SELECT count(*) FROM w) AS inserted, (SELECT count(*) FROM n) AS notified,
       (SELECT lease_token FROM w) AS lease_token, {s}.epoch_us({now}) AS now_us)"},

    // Makes room for a new run under id $1 (which start_workflow then inserts, in the same
    // transaction) when its latest run has ended with a status in $2 (json array): that run stays,
    // with its history, no longer the latest.
    {stmt::retire_run, R"(
UPDATE {s}.workflows SET latest = false
WHERE workflow_id = $1 AND latest AND status IN (SELECT jsonb_array_elements_text($2::jsonb))
RETURNING run_id)"},

    // The latest run of id $1.
    {stmt::read_workflow, R"(
SELECT workflow_id, run_id::text, name, status, result::text, coalesce(error_type, '') AS error_type,
       coalesce(error_message, '') AS error_message
FROM {s}.workflows WHERE workflow_id = $1 AND latest)"},

    // Run $1.
    {stmt::read_run, R"(
SELECT workflow_id, run_id::text, name, status, result::text, coalesce(error_type, '') AS error_type,
       coalesce(error_message, '') AS error_message
FROM {s}.workflows WHERE run_id = $1::uuid)"},

    // After a start whose answer was lost: whether run $2::uuid of id $1 exists, and its lease
    // token while it is still leased to owner $3 (else NULL: any runner claims it).
    {stmt::own_start, R"(
SELECT true AS ours, CASE WHEN lease_owner = $3 AND lease_until >= {now} THEN lease_token END AS lease_token,
       {s}.epoch_us({now}) AS now_us
FROM {s}.workflows WHERE run_id = $2::uuid AND workflow_id = $1)"},

    // $1 names (json array), $2 limit, $3 owner, $4 lease ms, $5 claim token, $6 first of $2 lease tokens.
    // Oldest first: runnable since, or due to wake since. Searched per workflow name, so a claim
    // reads only the head of each name's index, never the whole backlog (nor other services').
    {stmt::claim_workflows, R"(
WITH c AS (
  SELECT * FROM (
    SELECT p.* FROM jsonb_array_elements_text($1::jsonb) AS n(name), LATERAL (
      SELECT run_id, runnable_since AS since FROM {s}.workflows WHERE {runnable_workflow}
      ORDER BY runnable_since LIMIT $2 FOR UPDATE SKIP LOCKED) AS p
    UNION ALL
    SELECT x.* FROM jsonb_array_elements_text($1::jsonb) AS n(name), LATERAL (
      SELECT run_id, wake_at FROM {s}.workflows WHERE {waking_workflow}
      ORDER BY wake_at LIMIT $2 FOR UPDATE SKIP LOCKED) AS x) AS waiting
  ORDER BY since LIMIT $2),
n AS (SELECT run_id, row_number() OVER () - 1 AS rn FROM c)
UPDATE {s}.workflows w
SET lease_token = $6::bigint + n.rn, lease_owner = $3, claim_token = $5,
    lease_until = {now} + $4::bigint * interval '1 millisecond'
FROM n WHERE w.run_id = n.run_id
RETURNING w.workflow_id, w.run_id::text, w.name, w.next_seq, w.lease_token,
          {s}.epoch_us({now}) AS now_us, {start_data}, {replayed_seq}, {async_commit})"},

    // What a claim whose answer was lost had taken: $1 claim token
    {stmt::reclaim_workflows, R"(
SELECT workflow_id, run_id::text, name, next_seq, lease_token, {s}.epoch_us({now}) AS now_us, {start_data},
       {replayed_seq}
FROM {s}.workflows w WHERE claim_token = $1 AND status = 'running' AND lease_until >= {now})"},

    // $1 run id, $2 first seq. One row per event, each with the run's id and workflow name; one
    // row with no event when there is none from $2 on. The rows read start at the one holding $2.
    {stmt::read_journal, R"(
SELECT w.workflow_id, w.run_id::text, w.name AS workflow_name, {replayed_seq}, j.seq, j.kind,
       coalesce(j.step, -1) AS step,
       coalesce(j.name, '') AS event_name, j.data::text
FROM {s}.workflows w LEFT JOIN (
  SELECT * FROM {s}.journal_events
  WHERE run_id = $1::uuid AND seq >= $2
    AND row_seq >= (SELECT coalesce(max(r.seq), 0) FROM {s}.journal r WHERE r.run_id = $1::uuid AND r.seq <= $2)
) j ON true
WHERE w.run_id = $1::uuid ORDER BY j.seq)"},

    // One statement, one implicit transaction: fenced by the workflow lease. $1 run id, $2 lease token,
    // $3 events (json array), $4 status, $5 result, $6 error type, $7 error message,
    // $8 journal length the replay saw, $9 wake_at us (-1: none), $10 tasks (json array),
    // $11 tasks channel, $12 ended channel, $13 owner, $14 lease margin ms, $15 claim token,
    // $16 the run's messages_sent when the replay read its inbox (-1: it did not), $17 the messages
    // it received (json array of [seq, step]), $18 the events it published (json array of
    // [key, value, step], one per key), $19 events channel, $20 the children it starts (json array
    // of NewChild), $21 workflows channel, $22 the steps whose tasks a cancel it delivered drops
    // (json array), $23 whether it delivered a cancel: its running children under the cancel
    // policy are asked too (those busy in a commit of their own are asked when it ends). A child
    // id taken since the replay read it refuses the whole commit (SQLSTATE DUR01, from the final
    // SELECT), and so does a journal grown since, when the run continues as new (status
    // 'continued': what came, a cancel request say, would be lost with the run). Such a run is no
    // longer its id's latest: continue_run inserts the next in the same transaction. $24 the
    // engine's app version ('' none), recorded on the run and its new children; a blocked run is
    // blocked no more.
    {stmt::commit_replay, R"(
WITH w AS (
  UPDATE {s}.workflows
  SET next_seq = next_seq + jsonb_array_length($3::jsonb), status = $4, result = $5::jsonb,
      error_type = nullif($6, ''), error_message = nullif($7, ''),
      runnable = {replay_outdated}, runnable_since = CASE WHEN {replay_outdated} THEN statement_timestamp() ELSE runnable_since END,
      wake_at = {s}.from_us(nullif($9::bigint, -1)),
      lease_token = NULL, lease_owner = NULL, lease_until = NULL, updated_at = statement_timestamp(),
      ended_at = CASE WHEN $4 <> 'running' THEN statement_timestamp() END, latest = latest AND $4 <> 'continued',
      app_version = nullif($24, ''), blocked_at = NULL, blocked = NULL,
      replay_lag = next_seq + jsonb_array_length($3::jsonb) - $8
  WHERE run_id = $1::uuid AND lease_token = $2 AND (status = 'running') IS TRUE
  RETURNING workflow_id, next_seq - jsonb_array_length($3::jsonb) AS base, run_id),
c AS ({drop_unawaited}),
e AS (
  INSERT INTO {s}.journal (run_id, seq, kind, step, name, data, more)
  SELECT w.run_id, w.base, x.v->>'kind', (x.v->>'step')::int, x.v->>'name', coalesce(x.v->'data', '{{}}'),
         {more_of_replay}
  FROM w, LATERAL (SELECT $3::jsonb->0 AS v) AS x WHERE x.v IS NOT NULL),
t AS ({insert_tasks}),
r AS (
  UPDATE {s}.messages m SET received_step = (x.v->>1)::int, received_at = statement_timestamp()
  FROM w, jsonb_array_elements($17::jsonb) AS x(v)
  WHERE m.run_id = w.run_id AND m.seq = (x.v->>0)::int AND m.received_step IS NULL),
p AS (
  INSERT INTO {s}.events (run_id, key, value, step)
  SELECT w.run_id, x.v->>0, x.v->1, (x.v->>2)::int FROM w, jsonb_array_elements($18::jsonb) AS x(v)
  ON CONFLICT (run_id, key) DO UPDATE SET value = excluded.value, step = excluded.step, set_at = statement_timestamp()
  RETURNING 1),
pn AS (SELECT pg_notify($19, '') WHERE EXISTS (SELECT 1 FROM p)),
n AS (SELECT pg_notify($11, '') FROM w WHERE EXISTS (SELECT 1 FROM t WHERE status = 'pending')),
d AS (SELECT pg_notify($12, '') FROM w WHERE $4 <> 'running'),
kids AS (SELECT x.v FROM w, jsonb_array_elements($20::jsonb) AS x(v)),
retired AS (
  UPDATE {s}.workflows o SET latest = false, updated_at = statement_timestamp()
  FROM kids WHERE o.workflow_id = kids.v->>'workflow_id' AND o.latest AND o.status <> 'running'
    AND kids.v->'replaceable' ? o.status
  RETURNING o.run_id),
ch AS (
  INSERT INTO {s}.workflows (workflow_id, run_id, name, status, input, next_seq, runnable, started_by, parent_run_id,
                             parent_step, parent_close, app_version)
  SELECT kids.v->>'workflow_id', (kids.v->>'run_id')::uuid, kids.v->>'name', 'running', kids.v->'input', 1, true,
         'child', $1::uuid, (kids.v->>'step')::int, kids.v->>'parent_close', nullif($24, '')
  FROM kids, (SELECT count(*) FROM retired) AS after_retiring  -- so the ids retired have room first
  ON CONFLICT (workflow_id) WHERE latest DO NOTHING
  RETURNING run_id),
chj AS (
  INSERT INTO {s}.journal (run_id, seq, kind, data)
  SELECT ch.run_id, 0, 'workflow_started',
         jsonb_build_object('input', kids.v->'input', 'depth', (kids.v->>'depth')::int, 'parent',
                            jsonb_build_object('workflow_id', w.workflow_id, 'run_id', w.run_id,
                                               'step', (kids.v->>'step')::int))
  FROM w, ch JOIN kids ON (kids.v->>'run_id')::uuid = ch.run_id),
chn AS (SELECT pg_notify($21, '') WHERE EXISTS (SELECT 1 FROM ch)),
dr AS (
  UPDATE {s}.tasks k SET status = 'cancelled', updated_at = statement_timestamp()
  FROM w, jsonb_array_elements_text($22::jsonb) AS x(step)
  WHERE k.run_id = w.run_id AND k.step = x.step::int AND k.status IN ('pending', 'running')),
asked AS (
  SELECT c.run_id FROM {s}.workflows c, w
  WHERE $23::boolean AND c.parent_run_id = w.run_id AND c.status = 'running' AND c.parent_close = 'cancel'
    AND c.cancel_requested_at IS NULL
  FOR UPDATE OF c SKIP LOCKED),
{request_own_children}
SELECT (SELECT count(*) FROM w) AS committed, (SELECT base FROM w) AS base, {claimed_json} AS claimed,
       {s}.epoch_us({now}) AS now_us,
       (SELECT count(*) FROM n) + (SELECT count(*) FROM d) + (SELECT count(*) FROM pn) + (SELECT count(*) FROM chn)
         + (SELECT count(*) FROM asked_n) AS notified,
       CASE WHEN (SELECT count(*) FROM ch) < (SELECT count(*) FROM kids)
              OR ($4 = 'continued' AND (SELECT base FROM w) <> $8)
            THEN {s}.refuse_commit('a child workflow id was taken, or the journal grew, after the replay read them')
       END AS refused)"},

    // The run after run $1, which commit_replay (in this transaction) has just ended as continued:
    // run $2 of the same id, the latest now, with input $3 and the rest of how $1 was started (its
    // parent, depth, schedule). It takes over the messages $1 never received, renumbered in send
    // order (read now, with $1's row locked: every send that committed before is here, and every
    // later one finds $2), and $1's published events. $4 workflows channel.
    {stmt::continue_run, R"(
WITH o AS (SELECT * FROM {s}.workflows WHERE run_id = $1::uuid AND status = 'continued'),
m AS (
  SELECT seq, row_number() OVER (ORDER BY seq) AS rn FROM {s}.messages
  WHERE run_id = $1::uuid AND received_step IS NULL),
nw AS (
  INSERT INTO {s}.workflows (workflow_id, run_id, name, status, input, next_seq, runnable, started_by, origin,
                             parent_run_id, parent_step, parent_close, continued_from, messages_sent, app_version)
  SELECT o.workflow_id, $2::uuid, o.name, 'running', $3::jsonb, 1, true, 'continued', o.origin, o.parent_run_id,
         o.parent_step, o.parent_close, o.run_id, (SELECT count(*) FROM m), o.app_version
  FROM o RETURNING run_id),
e AS (
  INSERT INTO {s}.journal (run_id, seq, kind, data)
  SELECT nw.run_id, 0, 'workflow_started',
         (j.data - 'input') || jsonb_build_object('input', $3::jsonb, 'continued_from', $1::text)
  FROM nw, {s}.journal j WHERE j.run_id = $1::uuid AND j.seq = 0),
mv AS (
  UPDATE {s}.messages x SET run_id = nw.run_id, seq = m.rn
  FROM nw, m WHERE x.run_id = $1::uuid AND x.seq = m.seq),
ev AS (
  INSERT INTO {s}.events (run_id, key, value, step, set_at)
  SELECT nw.run_id, v.key, v.value, -1, v.set_at FROM nw, {s}.events v WHERE v.run_id = $1::uuid),
n AS (SELECT pg_notify($4, '') FROM nw)
SELECT (SELECT count(*) FROM nw) AS inserted, (SELECT count(*) FROM n) AS notified)"},

    // A message into the inbox of id $1's latest run, unless that run has one with idempotency
    // key $5 already (then its id is returned and nothing written). $2 topic, $3 payload, $4 message
    // id, $5 idempotency key ('' for none), $6 workflows channel. The run is made runnable, so a
    // replay waiting in receive() sees it; `status` is NULL when the id has no run.
    {stmt::send_message, R"(
WITH r AS (SELECT run_id, status FROM {s}.workflows WHERE workflow_id = $1 AND latest),
k AS (SELECT m.message_id::text AS message_id FROM {s}.messages m, r
      WHERE $5 <> '' AND m.run_id = r.run_id AND m.idempotency_key = $5),
w AS (
  UPDATE {s}.workflows
  SET messages_sent = messages_sent + 1, runnable = true,
      runnable_since = CASE WHEN runnable THEN runnable_since ELSE statement_timestamp() END
  WHERE workflow_id = $1 AND latest AND (status = 'running') IS TRUE AND NOT EXISTS (SELECT 1 FROM k)
  RETURNING run_id, messages_sent, lease_until),
i AS (
  INSERT INTO {s}.messages (run_id, seq, topic, message_id, payload, idempotency_key, sent_at)
  SELECT run_id, messages_sent, $2, $4::uuid, $3::jsonb, nullif($5, ''), {now} FROM w RETURNING seq),
n AS (SELECT pg_notify($6, '') FROM w WHERE lease_until IS NULL OR lease_until < {now})
SELECT (SELECT status FROM r) AS status, (SELECT message_id FROM k) AS existing_id,
       (SELECT count(*) FROM i) AS sent, (SELECT count(*) FROM n) AS notified)"},

    // After a send whose answer was lost: whether message $2 is in the inbox of a run of id $1.
    {stmt::own_message, R"(
SELECT 1 FROM {s}.messages m JOIN {s}.workflows w USING (run_id) WHERE w.workflow_id = $1 AND m.message_id = $2::uuid)"},

    // The latest value run $1 published under key $2 (no row when none), and the run's status.
    {stmt::read_event, R"(
SELECT w.status, e.value::text FROM {s}.workflows w LEFT JOIN {s}.events e ON e.run_id = w.run_id AND e.key = $2
WHERE w.run_id = $1::uuid)"},

    // The unreceived messages of topic $2 in run $1's inbox after seq $3, oldest first, at most
    // $4; every row carries the run's messages_sent as this snapshot saw it (one row, with NULL
    // message columns, when there are none).
    {stmt::read_inbox, R"(
SELECT w.messages_sent, m.seq, {s}.epoch_us(m.sent_at) AS sent_us, m.message_id::text, m.payload::text
FROM {s}.workflows w LEFT JOIN LATERAL (
  SELECT seq, sent_at, message_id, payload FROM {s}.messages
  WHERE run_id = w.run_id AND topic = $2 AND seq > $3 AND received_step IS NULL ORDER BY seq LIMIT $4) m ON true
WHERE w.run_id = $1::uuid ORDER BY m.seq)"},

    // Asks run $1 to cancel, with reason $2: $3 workflows channel. `requested` 1 when this call
    // asked, 0 when the run had been asked already or ended. Its status is read by a statement of
    // its own after this one: a status read here would be of the snapshot this statement began
    // with, from before a commit it waited for (a continue-as-new ending the run, say).
    {stmt::request_cancel, R"(
WITH r AS (SELECT $1::uuid AS run_id),
{request_one}
SELECT (SELECT count(*) FROM w) AS requested, (SELECT count(*) FROM n) AS notified)"},

    // Terminates run $1 at once, its code not told: $2 ended channel.
    {stmt::cancel_workflow, R"(
WITH r AS (SELECT $1::uuid AS run_id),
{cancel_one}
SELECT (SELECT count(*) FROM w) AS cancelled, (SELECT count(*) FROM n) AS notified)"},

    // Asks the running children of run $1 (ended) with the cancel policy to cancel, at most 1000 at
    // a time: $2 workflows channel. Returns their run ids.
    {stmt::cancel_children, R"(
WITH r AS (
  SELECT c.run_id FROM {s}.workflows c WHERE c.parent_run_id = $1::uuid AND {orphan}
  LIMIT 1000 FOR UPDATE OF c SKIP LOCKED),
{request_children}
SELECT w.run_id::text, (SELECT count(*) FROM n) AS notified FROM w)"},

    // Asks any running children with the cancel policy whose parent is not running to cancel, at
    // most 1000: those a crash kept from being asked when their parent ended. $1 workflows channel.
    {stmt::cancel_orphans, R"(
WITH r AS (
  SELECT c.run_id FROM {s}.workflows c WHERE {orphan}
  LIMIT 1000 FOR UPDATE OF c SKIP LOCKED),
{request_orphans}
SELECT w.run_id::text, (SELECT count(*) FROM n) AS notified FROM w)"},

    // The latest run of each child id of $1 (json array): no row for an id without one.
    {stmt::read_child_ids, R"(
SELECT w.workflow_id, w.run_id::text, w.status
FROM jsonb_array_elements_text($1::jsonb) AS x(id) JOIN {s}.workflows w ON w.workflow_id = x.id AND w.latest)"},

    // Of the tasks $1 (json array of task ids) being run here: those their run no longer wants
    // (cancelled when it ended, or gone with it).
    {stmt::unwanted_tasks, R"(
SELECT x.id::bigint AS task_id FROM jsonb_array_elements_text($1::jsonb) AS x(id)
WHERE NOT EXISTS (SELECT 1 FROM {s}.tasks t WHERE t.task_id = x.id::bigint AND t.status <> 'cancelled'))"},

    // $1 names (json array), $2 limit, $3 owner, $4 lease margin ms, $5 claim token, $6 first of $2
    // lease tokens. A running task whose lease expired is claimable again; its lost attempt is recorded.
    // Oldest first, searched per activity name, so other activities' backlogs are never walked.
    {stmt::claim_tasks, R"(
WITH c AS (
  SELECT * FROM (
    SELECT p.* FROM jsonb_array_elements_text($1::jsonb) AS n(name), LATERAL (
      SELECT task_id, run_id, step, status AS was, attempt AS old_attempt, attempt_started_at AS old_started,
             available_at AS since
      FROM {s}.tasks WHERE {pending_task}
      ORDER BY available_at LIMIT $2 FOR UPDATE SKIP LOCKED) AS p
    UNION ALL
    SELECT x.* FROM jsonb_array_elements_text($1::jsonb) AS n(name), LATERAL (
      SELECT task_id, run_id, step, status, attempt, attempt_started_at, lease_until
      FROM {s}.tasks WHERE {expired_task}
      ORDER BY lease_until LIMIT $2 FOR UPDATE SKIP LOCKED) AS x) AS waiting
  ORDER BY since LIMIT $2),
n AS (SELECT task_id, row_number() OVER () - 1 AS rn FROM c),
u AS (
  UPDATE {s}.tasks t
  SET status = 'running', attempt = t.attempt + 1, lease_token = $6::bigint + n.rn,
      lease_owner = $3, claim_token = $5, attempt_started_at = {now},
      first_started_at = coalesce(t.first_started_at, {now}),
      lease_until = {now} + (coalesce((t.options->>'timeout_ms')::bigint, {default_timeout_ms}) + $4::bigint) * interval '1 millisecond',
      updated_at = statement_timestamp()
  FROM c JOIN n USING (task_id) WHERE t.run_id = c.run_id AND t.step = c.step
  RETURNING t.task_id, t.run_id::text, t.workflow_id, t.step, t.name, t.input::text, t.options::text, t.attempt,
            t.attempt_base, t.lease_token, c.was,
            t.heartbeat::text, {s}.epoch_us(t.attempt_started_at) AS claimed_at_us,
            {s}.epoch_us(t.first_started_at) AS first_started_us,
            CASE WHEN c.was = 'running' THEN {s}.epoch_us(c.since) END AS lease_lost_us, {async_commit}),
x AS (
  INSERT INTO {s}.attempts (task_id, run_id, step, attempt, started_at, ended_at, outcome, error_type, error_message)
  SELECT task_id, run_id, step, old_attempt, old_started, {now}, 'lease_expired', 'durable::LeaseExpired',
         'the worker running this attempt stopped renewing its lease (crashed, hung or cut off)'
  FROM c WHERE was = 'running'
  ON CONFLICT DO NOTHING)
SELECT * FROM u)"},

    // What a claim whose answer was lost had taken: $1 claim token
    {stmt::reclaim_tasks, R"(
SELECT t.task_id, t.run_id::text, t.workflow_id, t.step, t.name, t.input::text, t.options::text, t.attempt,
       t.attempt_base, t.lease_token,
       CASE WHEN l.ended_at IS NOT NULL THEN 'running' ELSE 'pending' END AS was,
       t.heartbeat::text, {s}.epoch_us(t.attempt_started_at) AS claimed_at_us,
       {s}.epoch_us(t.first_started_at) AS first_started_us, {s}.epoch_us(l.ended_at) AS lease_lost_us
FROM {s}.tasks t
LEFT JOIN {s}.attempts l ON l.task_id = t.task_id AND l.attempt = t.attempt - 1 AND l.outcome = 'lease_expired'
WHERE t.claim_token = $1 AND t.status = 'running' AND t.lease_until >= {now})"},

    // Finishes a batch of tasks, at most one per workflow ($1, json array of rows as
    // jsonb_to_recordset below), each fenced by its lease. A finished task's outcome is journaled
    // (a completed task's row is deleted, its event says all; a failed one stays for a resume)
    // and its workflow made runnable; or, when the row carries the replay its outcome unblocks
    // (computed by this engine from its cached journal, for a journal of `expected_seq` events of
    // run `run_id`) and the workflow is still as that replay saw it ({fast}), the replay's events,
    // tasks and status are committed with it and the workflow goes on without a claim. A continued
    // workflow gets the row's claim token, so a retry after a lost answer can tell.
    // $1 rows, $2 owner, $3 lease margin ms, $4 workflows channel, $5 tasks channel, $6 ended channel,
    // $7 the owner's app version ('' none), recorded on a run continued (and so no longer blocked).
    // A row's `fp` is its input's fingerprint for idempotent_results when a codec is on (the engine's,
    // of the plaintext: the stored input is encoded); NULL: md5 of the stored input.
    // One row per input row: task id, finished, continued, base seq, tasks leased at once, now.
    {stmt::complete_steps, R"(
WITH i AS MATERIALIZED (
  SELECT * FROM jsonb_to_recordset($1::jsonb) AS x(
    task_id bigint, task_run uuid, step int, lease_token bigint, outcome text, result text, error_type text, error_message text, fp text, record boolean,
    expected_seq int, replayed_seq int, run_id uuid, claim_token text, events jsonb, tasks jsonb, wf_status text, wf_result text,
    wf_error_type text, wf_error_message text, wake_at_us bigint)),
td AS (
  DELETE FROM {s}.tasks k USING i
  WHERE i.outcome = 'completed' AND {finishing_task}
  RETURNING {finished_task}),
tf AS (
  UPDATE {s}.tasks k
  SET status = i.outcome, error_type = nullif(i.error_type, ''), error_message = nullif(i.error_message, ''),
      lease_until = NULL, updated_at = statement_timestamp()
  FROM i
  WHERE i.outcome <> 'completed' AND {finishing_task}
  RETURNING {finished_task}),
t AS (SELECT * FROM td UNION ALL SELECT * FROM tf),
a AS (
  INSERT INTO {s}.attempts (task_id, run_id, step, attempt, started_at, ended_at, outcome, error_type, error_message)
  SELECT task_id, run_id, step, attempt, attempt_started_at, {now}, outcome, nullif(error_type, ''),
         nullif(error_message, '')
  FROM t WHERE record AND outcome <> 'completed'  -- a successful attempt is in its completed event
  ON CONFLICT DO NOTHING),
ir AS (
  INSERT INTO {s}.idempotent_results (activity, key, result, input_fingerprint, workflow_id, task_id)
  SELECT name, idempotency_key, result::jsonb, fp, workflow_id, task_id FROM t
  WHERE outcome = 'completed' AND idempotency_key IS NOT NULL
  ON CONFLICT DO NOTHING),
l AS (
  DELETE FROM {s}.idempotency_locks o USING t
  WHERE t.idempotency_key IS NOT NULL AND o.activity = t.name AND o.key = t.idempotency_key
    AND o.task_id = t.task_id AND o.lease_token = t.lease_token AND NOT o.outlives_task  -- else its body runs on
  RETURNING o.task_id, o.waiting),
w AS (
  UPDATE {s}.workflows wf
  SET next_seq = wf.next_seq + 1 + CASE WHEN {fast} THEN jsonb_array_length(t.events) ELSE 0 END,
      status = CASE WHEN {fast} THEN t.wf_status ELSE wf.status END,
      result = CASE WHEN {fast} THEN t.wf_result::jsonb ELSE wf.result END,
      error_type = CASE WHEN {fast} THEN nullif(t.wf_error_type, '') ELSE wf.error_type END,
      error_message = CASE WHEN {fast} THEN nullif(t.wf_error_message, '') ELSE wf.error_message END,
      wake_at = CASE WHEN {fast} THEN {s}.from_us(nullif(t.wake_at_us, -1)) ELSE wf.wake_at END,
      ended_at = CASE WHEN {fast} AND t.wf_status <> 'running' THEN statement_timestamp() ELSE wf.ended_at END,
      lease_token = CASE WHEN {fast} THEN NULL ELSE wf.lease_token END,
      lease_owner = CASE WHEN {fast} THEN NULL ELSE wf.lease_owner END,
      lease_until = CASE WHEN {fast} THEN NULL ELSE wf.lease_until END,
      claim_token = CASE WHEN {fast} THEN t.claim_token ELSE wf.claim_token END,
      app_version = CASE WHEN {fast} THEN nullif($7, '') ELSE wf.app_version END,
      blocked_at = CASE WHEN {fast} THEN NULL ELSE wf.blocked_at END,
      blocked = CASE WHEN {fast} THEN NULL ELSE wf.blocked END,
      replay_lag = CASE WHEN {fast} THEN jsonb_array_length(t.events) ELSE wf.replay_lag + 1 END,
      runnable = NOT {fast}, updated_at = statement_timestamp(),
      runnable_since = CASE WHEN NOT {fast} AND NOT wf.runnable THEN statement_timestamp() ELSE wf.runnable_since END
  FROM t WHERE wf.run_id = t.run_id AND (wf.status = 'running') IS TRUE
  RETURNING wf.workflow_id, wf.run_id, t.task_id, t.step, t.name, t.attempt, t.attempt_started_at, t.outcome, t.result,
            t.error_type,
            t.error_message, t.events, t.tasks, t.wf_status, t.claim_token,
            coalesce(wf.claim_token = t.claim_token, false) AS fast,
            wf.next_seq - 1 - CASE WHEN coalesce(wf.claim_token = t.claim_token, false)
                                   THEN jsonb_array_length(t.events) ELSE 0 END AS base),
e AS (  -- one row: the outcome, then the replay's events it continued with
  INSERT INTO {s}.journal (run_id, seq, kind, step, name, data, more)
  SELECT run_id, base, CASE WHEN outcome = 'completed' THEN 'activity_completed' ELSE 'activity_failed' END, step,
         name, CASE WHEN outcome = 'completed' THEN jsonb_build_object('result', result::jsonb, 'attempts', attempt,
                                                                       'started_us', {s}.epoch_us(attempt_started_at))
                    ELSE jsonb_build_object('error_type', error_type, 'error_message', error_message,
                                            'attempts', attempt) END,
         CASE WHEN fast THEN {more_of_steps} END
  FROM w),
k AS (SELECT * FROM w WHERE w.fast),
c AS ({drop_unawaited_of_steps}),
nt AS ({insert_tasks_of_steps}),
n AS (SELECT pg_notify($4, '') FROM w WHERE NOT w.fast LIMIT 1),
m AS (SELECT pg_notify($5, '') WHERE EXISTS (SELECT 1 FROM nt WHERE status = 'pending')),
d AS (SELECT pg_notify($6, '') FROM k WHERE k.wf_status <> 'running' LIMIT 1)
SELECT i.task_id, t.task_id IS NOT NULL AS finished, coalesce(w.fast, false) AS continued, w.base,
       {claimed_json_of_steps} AS claimed, {s}.epoch_us({now}) AS now_us,
       (SELECT count(*) FROM n) + (SELECT count(*) FROM m) + (SELECT count(*) FROM d) AS notified,
       coalesce((SELECT bool_or(l.waiting) FROM l WHERE l.task_id = i.task_id), false) AS key_waiters
FROM i LEFT JOIN t ON t.task_id = i.task_id LEFT JOIN w ON w.task_id = i.task_id)"},

    // Schedules the next attempt after a failed one, fenced by the lease, unless it would start
    // past the retry horizon; it lets go of its idempotency key meanwhile (and says whether
    // tasks wait for it), unless its body runs on (a timed-out attempt: outlives_task).
    // $1 run id, $2 lease token, $3 delay ms, $4 error type, $5 error message, $6 step
    {stmt::retry_task, R"(
WITH t AS (
  SELECT task_id, run_id, step, attempt, attempt_started_at, {now} + $3::bigint * interval '1 millisecond' AS retry_at,
         {now} + $3::bigint * interval '1 millisecond'
           <= first_started_at + coalesce((options->>'max_retry_horizon_ms')::bigint, {default_retry_horizon_ms}) * interval '1 millisecond' AS within
  FROM {s}.tasks
  WHERE run_id = $1::uuid AND step = $6 AND lease_token = $2 AND status = 'running' AND lease_until >= {now}
  FOR UPDATE),
u AS (
  UPDATE {s}.tasks k
  SET status = 'pending', available_at = t.retry_at, error_type = $4, error_message = $5, lease_token = NULL,
      lease_owner = NULL, lease_until = NULL, updated_at = statement_timestamp()
  FROM t WHERE k.run_id = t.run_id AND k.step = t.step AND t.within
  RETURNING k.task_id),
a AS (
  INSERT INTO {s}.attempts (task_id, run_id, step, attempt, started_at, ended_at, outcome, error_type, error_message,
                            retry_at)
  SELECT t.task_id, t.run_id, t.step, t.attempt, t.attempt_started_at, {now}, 'failed', $4, $5, t.retry_at
  FROM t JOIN u USING (task_id)
  ON CONFLICT DO NOTHING),
l AS (
  DELETE FROM {s}.idempotency_locks
  WHERE (activity, key) IN (SELECT name, idempotency_key FROM {s}.tasks
                            WHERE run_id = $1::uuid AND step = $6 AND idempotency_key IS NOT NULL)
    AND task_id = (SELECT task_id FROM u) AND lease_token = $2 AND NOT outlives_task
  RETURNING waiting)
SELECT (SELECT count(*) FROM t) AS owned, (SELECT count(*) FROM u) AS retried,
       coalesce((SELECT bool_or(waiting) FROM l), false) AS key_waiters)"},

    // Extends a running attempt's lease, and the hold of the idempotency key it locked, and keeps
    // its latest details ('' keeps the previous ones). Never earlier: a heartbeat whose clock was
    // read before a test's time skip (which moved the lease with the clock) keeps the moved lease.
    // $1 run id, $2 lease token, $3 lease ms (timeout + margin), $4 details json or '', $5 step
    {stmt::heartbeat, R"(
WITH h AS (
  UPDATE {s}.tasks
  SET lease_until = greatest(lease_until, {now} + $3::bigint * interval '1 millisecond'),
      heartbeat = coalesce(nullif($4, '')::jsonb, heartbeat), updated_at = statement_timestamp()
  WHERE run_id = $1::uuid AND step = $5 AND lease_token = $2 AND status = 'running' AND lease_until >= {now}
  RETURNING name, idempotency_key, lease_until),
l AS (
  UPDATE {s}.idempotency_locks o SET held_until = h.lease_until
  FROM h WHERE h.idempotency_key IS NOT NULL AND o.activity = h.name AND o.key = h.idempotency_key
    AND o.lease_token = $2 AND NOT o.outlives_task)
SELECT 1 FROM h)"},

    // After a fenced write matched nothing: did this very lease already finish the task
    // (an earlier try whose commit we never heard back about), or was it fenced off?
    // $1 run id, $2 lease token, $3 step
    {stmt::task_outcome, R"(
SELECT status, coalesce(lease_token = $2, false) AS same_lease FROM {s}.tasks WHERE run_id = $1::uuid AND step = $3)"},

    // Whether step $2 of run $1 was journaled as completed by its attempt $3 (its task row is gone).
    {stmt::step_completed, R"(
SELECT 1 FROM {s}.journal  -- a completed event is its row's first
WHERE run_id = $1::uuid AND kind = 'activity_completed' AND step = $2 AND (data->>'attempts')::int = $3)"},

    // Whether attempt $2 of task $1 failed and had its retry scheduled (by retry_task).
    {stmt::attempt_retried, R"(
SELECT 1 FROM {s}.attempts WHERE task_id = $1 AND attempt = $2 AND outcome = 'failed' AND retry_at IS NOT NULL)"},

    // Hands a running task back without counting the attempt, claimable again after $3 ms
    // (graceful shutdown; a task waiting for another holder of its idempotency key).
    // $1 run id, $2 lease token, $3 delay ms, $4 step
    {stmt::release_task, R"(
UPDATE {s}.tasks
SET status = 'pending', attempt = attempt - 1, available_at = {now} + $3::bigint * interval '1 millisecond',
    lease_token = NULL,
    lease_owner = NULL, lease_until = NULL, updated_at = statement_timestamp()
WHERE run_id = $1::uuid AND step = $4 AND lease_token = $2 AND status = 'running')"},

    // Hands back a running task this engine cannot run (its codec lacks the key of its input),
    // fenced by its lease, without counting the attempt, and marks its running run blocked with
    // $3 (json: step, journaled, asked, message) by an engine of app version $4, leaving the run's
    // lease and wake-up alone (no `versions`: wake_blocked is for code, not keys). The task is
    // due again after $5 ms doubled for each time the run was blocked since it last made progress
    // (at most 64 times). $1 run id, $2 lease token, $6 step. Returns how many times the run was
    // blocked (no row: the lease was lost).
    {stmt::block_task, R"(
WITH r AS (
  SELECT coalesce((SELECT (blocked->>'times')::int FROM {s}.workflows WHERE run_id = $1::uuid), 0) AS times),
t AS (
  UPDATE {s}.tasks
  SET status = 'pending', attempt = attempt - 1,
      available_at = {now} + $5::bigint * power(2, least((SELECT times FROM r), 6)) * interval '1 millisecond',
      lease_token = NULL, lease_owner = NULL, lease_until = NULL, updated_at = statement_timestamp()
  WHERE run_id = $1::uuid AND step = $6 AND lease_token = $2 AND status = 'running'
  RETURNING run_id)
UPDATE {s}.workflows w
SET blocked_at = coalesce(w.blocked_at, statement_timestamp()),
    blocked = $3::jsonb || jsonb_build_object('app_version', $4::text, 'times', (SELECT times FROM r) + 1),
    updated_at = statement_timestamp()
FROM t WHERE w.run_id = t.run_id AND (w.status = 'running') IS TRUE
RETURNING (w.blocked->>'times')::int AS times)"},

    // Takes the right to run the body for (activity, key), held until this attempt's lease ends,
    // unless another holds it. Then the task waits instead, in the same statement: handed back
    // (the attempt not counted) until the hold runs out, and the lock row marked `waiting`, so
    // that the holder's release, which has to wait for this statement's row lock, wakes it sooner.
    // $1 run id, $2 lease token, $3 step. One row: locked, and whether the lease was still ours (not after
    // a retry whose first try committed the wait).
    {stmt::lock_key, R"(
WITH k AS (
  INSERT INTO {s}.idempotency_locks (activity, key, task_id, lease_token, run_id, step, held_until)
  SELECT name, idempotency_key, task_id, $2, run_id, step, lease_until FROM {s}.tasks WHERE run_id = $1::uuid AND step = $3
  ON CONFLICT (activity, key) DO UPDATE
  SET task_id = CASE WHEN {holder_live} THEN idempotency_locks.task_id ELSE excluded.task_id END,
      run_id = CASE WHEN {holder_live} THEN idempotency_locks.run_id ELSE excluded.run_id END,
      step = CASE WHEN {holder_live} THEN idempotency_locks.step ELSE excluded.step END,
      lease_token = CASE WHEN {holder_live} THEN idempotency_locks.lease_token ELSE excluded.lease_token END,
      held_until = CASE WHEN {holder_live} THEN idempotency_locks.held_until ELSE excluded.held_until END,
      outlives_task = {holder_live} AND idempotency_locks.outlives_task,
      waiting = {holder_live} OR idempotency_locks.waiting
  RETURNING run_id = $1::uuid AND step = $3 AND lease_token = $2 AS locked,
            coalesce(held_until, (SELECT x.lease_until FROM {s}.tasks x
                                  WHERE x.run_id = idempotency_locks.run_id AND x.step = idempotency_locks.step
                                    AND x.lease_token = idempotency_locks.lease_token)) AS holder_until),
r AS (
  UPDATE {s}.tasks
  SET status = 'pending', attempt = attempt - 1,
      available_at = coalesce((SELECT holder_until FROM k), {now} + interval '1 second'), lease_token = NULL,
      lease_owner = NULL, lease_until = NULL, updated_at = statement_timestamp()
  WHERE run_id = $1::uuid AND step = $3 AND lease_token = $2 AND status = 'running' AND NOT (SELECT locked FROM k)
  RETURNING 1)
SELECT coalesce((SELECT locked FROM k), false) AS locked,  -- no row: the task is gone (finished by another lease)
       EXISTS (SELECT 1 FROM {s}.tasks WHERE run_id = $1::uuid AND step = $3 AND lease_token = $2 AND status = 'running')
         AS owned)"},

    // Makes the tasks that wait for these idempotency keys ($1, json array of [activity, key hex],
    // just let go of by their holders, whose rows may be gone) claimable at once. $2 tasks channel.
    {stmt::wake_key_waiters, R"(
WITH w AS (
  UPDATE {s}.tasks q SET available_at = {now}
  FROM jsonb_array_elements($1::jsonb) AS h(v)
  WHERE q.status = 'pending' AND q.idempotency_key IS NOT NULL AND q.name = h.v->>0
    AND q.idempotency_key = decode(h.v->>1, 'hex') AND q.available_at > {now}
  RETURNING q.task_id)
SELECT (SELECT count(*) FROM w) AS woken, (SELECT count(*) FROM (SELECT pg_notify($2, '') WHERE EXISTS (SELECT 1 FROM w)) n))"},

    // Keeps the idempotency keys of bodies that run on after their tasks let go of them held for
    // $2 ms more, whatever their tasks do. $1 json array of [activity, key hex, lease token].
    {stmt::hold_keys, R"(
UPDATE {s}.idempotency_locks o
SET held_until = greatest(o.held_until, {now} + $2::bigint * interval '1 millisecond'), outlives_task = true
FROM jsonb_array_elements($1::jsonb) AS h(v)
WHERE o.activity = h.v->>0 AND o.key = decode(h.v->>1, 'hex') AND o.lease_token = (h.v->>2)::bigint)"},

    // Lets go of the idempotency keys of bodies that returned ($1 as for hold_keys), unless
    // another lease took them over, and makes the tasks waiting for them claimable. $2 tasks channel.
    {stmt::release_keys, R"(
WITH l AS (
  DELETE FROM {s}.idempotency_locks o USING jsonb_array_elements($1::jsonb) AS h(v)
  WHERE o.activity = h.v->>0 AND o.key = decode(h.v->>1, 'hex') AND o.lease_token = (h.v->>2)::bigint
  RETURNING o.activity, o.key),
w AS (
  UPDATE {s}.tasks q SET available_at = {now}
  FROM l
  WHERE q.status = 'pending' AND q.idempotency_key IS NOT NULL AND q.name = l.activity
    AND q.idempotency_key = l.key AND q.available_at > {now}
  RETURNING q.task_id)
SELECT (SELECT count(*) FROM l) AS released, (SELECT count(*) FROM w) AS woken,
       (SELECT count(*) FROM (SELECT pg_notify($2, '') WHERE EXISTS (SELECT 1 FROM w)) n) AS notified)"},

    // A committed result for the task's (activity, key), and whether it came from the same input
    // (as md5 fingerprints tell; a fingerprint the engine computed under a codec, it compares itself).
    // $1 run id, $2 step
    {stmt::reusable_result, R"(
SELECT r.result::text, r.input_fingerprint = md5(t.input::text) AS same_input, r.input_fingerprint, r.workflow_id
FROM {s}.tasks t JOIN {s}.idempotent_results r ON r.activity = t.name AND r.key = t.idempotency_key
WHERE t.run_id = $1::uuid AND t.step = $2)"},

    // How long the oldest claimable task of these activities ($1, json array of names) has waited:
    // pending since it became available, or running since its lease ran out. One index probe per name.
    {stmt::queue_age, R"(
SELECT coalesce(extract(epoch FROM {now} - min(since)), 0)::float8 AS age
FROM jsonb_array_elements_text($1::jsonb) AS n(name),
LATERAL (
  SELECT (SELECT available_at FROM {s}.tasks WHERE {pending_task} ORDER BY available_at LIMIT 1) AS since
  UNION ALL
  SELECT (SELECT lease_until FROM {s}.tasks WHERE {expired_task} ORDER BY lease_until LIMIT 1)) AS oldest)"},

    // The same for runnable workflows of these workflow names ($1, json array): claimable since
    // they became runnable (stamped by the server's own clock), or since their timer came due.
    {stmt::workflow_queue_age, R"(
SELECT coalesce(extract(epoch FROM max(age)), 0)::float8 AS age
FROM jsonb_array_elements_text($1::jsonb) AS n(name),
LATERAL (
  SELECT statement_timestamp() - (SELECT runnable_since FROM {s}.workflows WHERE {runnable_workflow}
                  ORDER BY runnable_since LIMIT 1) AS age
  UNION ALL
  SELECT {now} - (SELECT wake_at FROM {s}.workflows WHERE {waking_workflow} ORDER BY wake_at LIMIT 1)) AS oldest)"},

    // A replay of run $1 under lease $2 diverged from its journal: the run stays running, blocked
    // with the divergence $3 (json: step, journaled, asked, message) by an engine of app version $4,
    // and nothing else is written. It is due again after $5 ms doubled for each time it was blocked
    // since it last made progress (at most 64 times), unless something makes it runnable before;
    // `versions` lists the app versions that blocked it, which wake_blocked leaves alone. Returns
    // how many times it was blocked (1: the first, which is logged).
    {stmt::block_run, R"(
UPDATE {s}.workflows
SET blocked_at = coalesce(blocked_at, statement_timestamp()),
    blocked = $3::jsonb || jsonb_build_object(
      'app_version', $4::text, 'times', coalesce((blocked->>'times')::int, 0) + 1,
      'versions', (coalesce(blocked->'versions', '[]'::jsonb) - $4::text) || to_jsonb($4::text)),
    app_version = nullif($4::text, ''), runnable = false,
    wake_at = {now} + $5::bigint * power(2, least(coalesce((blocked->>'times')::int, 0), 6)) * interval '1 millisecond',
    lease_token = NULL, lease_owner = NULL, lease_until = NULL, updated_at = statement_timestamp()
WHERE run_id = $1::uuid AND lease_token = $2 AND (status = 'running') IS TRUE
RETURNING (blocked->>'times')::int AS times)"},

    // Blocked runs of workflow names $1 (json array) that no engine of app version $2 tried since
    // they last made progress: due now, for this engine's code to try. No NOTIFY: the engine wakes
    // its own runners, which so come first (others find them due at their next poll), rather than
    // racing every engine, those of the version that blocked them included.
    {stmt::wake_blocked, R"(
WITH w AS (
  UPDATE {s}.workflows SET wake_at = {now}, updated_at = statement_timestamp()
  WHERE status = 'running' AND blocked_at IS NOT NULL AND name IN (SELECT jsonb_array_elements_text($1::jsonb))
    AND NOT (blocked->'versions' ? $2) AND wake_at > {now}
  RETURNING 1)
SELECT count(*) AS woken FROM w)"},

    // How many running runs of workflow names $1 (json array) are blocked.
    {stmt::blocked_count, R"(
SELECT count(*) AS blocked FROM {s}.workflows
WHERE status = 'running' AND blocked_at IS NOT NULL AND name IN (SELECT jsonb_array_elements_text($1::jsonb)))"},

    // Engine $1 (its owner name) of instance $2 and app version $3, with $4 activity slots and $5
    // runners, is alive for $6 ms more; $7: it is starting (a pid reused after a crash starts anew).
    // Rows of engines that stopped saying so an hour ago go.
    {stmt::engine_alive, R"(
WITH gone AS (DELETE FROM {s}.engines WHERE expires_at < statement_timestamp() - interval '1 hour')
INSERT INTO {s}.engines (owner, instance, app_version, activity_capacity, workflow_capacity, expires_at)
VALUES ($1, $2, nullif($3, ''), $4, $5, statement_timestamp() + $6::bigint * interval '1 millisecond')
ON CONFLICT (owner) DO UPDATE
SET instance = EXCLUDED.instance, app_version = EXCLUDED.app_version, activity_capacity = EXCLUDED.activity_capacity,
    workflow_capacity = EXCLUDED.workflow_capacity, seen_at = statement_timestamp(), expires_at = EXCLUDED.expires_at,
    started_at = CASE WHEN $7 THEN statement_timestamp() ELSE {s}.engines.started_at END)"},
    {stmt::engine_stopped, "DELETE FROM {s}.engines WHERE owner = $1"},

    // Schedules. Times cross as microseconds since the epoch; the cron arithmetic is done in C++.
    {stmt::db_now_us, "SELECT {s}.epoch_us({now}) AS now_us"},

    // A block of $1 lease tokens, never handed out before; the first one. Committed synchronously.
    {stmt::reserve_lease_tokens, "UPDATE {s}.lease_token_blocks SET next = next + $1 RETURNING next - $1 AS first"},

    // $1 id, $2 workflow, $3 input, $4 cron, $5 zone, $6 policy, $7 limit, $8 grace ms, $9 next fire,
    // $10 previous fire, $11 revision, $12 channel. The revision read is the one before this
    // statement: ours when an earlier try of this create committed.
    {stmt::create_schedule, R"(
WITH i AS (
  INSERT INTO {s}.schedules (schedule_id, workflow_name, input, cron, time_zone, misfire_policy, catchup_limit,
                             misfire_grace_ms, next_fire_at, prev_fire_at, revision)
  VALUES ($1, $2, $3::jsonb, $4, $5, $6, $7, $8, {s}.from_us($9), {s}.from_us($10), $11::uuid)
  ON CONFLICT (schedule_id) DO NOTHING
  RETURNING 1),
n AS (SELECT pg_notify($12, '') FROM i)
SELECT (SELECT count(*) FROM i) AS written, (SELECT count(*) FROM n) AS notified,
       (SELECT revision::text FROM {s}.schedules WHERE schedule_id = $1) AS revision_before)"},

    // The same parameters; the next fire is recomputed by the caller, so a changed cron applies at once.
    {stmt::update_schedule, R"(
WITH u AS (
  UPDATE {s}.schedules
  SET workflow_name = $2, input = $3::jsonb, cron = $4, time_zone = $5, misfire_policy = $6, catchup_limit = $7,
      misfire_grace_ms = $8, next_fire_at = {s}.from_us($9), prev_fire_at = {s}.from_us($10), revision = $11::uuid,
      updated_at = statement_timestamp()
  WHERE schedule_id = $1
  RETURNING 1),
n AS (SELECT pg_notify($12, '') FROM u)
SELECT (SELECT count(*) FROM u) AS written, (SELECT count(*) FROM n) AS notified)"},

    // $1 id, $2 paused, $3 channel
    {stmt::pause_schedule, R"(
WITH u AS (UPDATE {s}.schedules SET paused = $2, updated_at = statement_timestamp() WHERE schedule_id = $1 RETURNING 1),
n AS (SELECT pg_notify($3, '') FROM u)
SELECT (SELECT count(*) FROM u) AS written, (SELECT count(*) FROM n) AS notified)"},

    {stmt::delete_schedule, "DELETE FROM {s}.schedules WHERE schedule_id = $1 RETURNING 1"},

    // $1 id, or NULL for all
    {stmt::read_schedules, R"(
SELECT schedule_id, workflow_name, input::text, cron, time_zone, misfire_policy, catchup_limit, misfire_grace_ms,
       paused, {s}.epoch_us(next_fire_at) AS next_fire_us, fires_started, fires_dropped
FROM {s}.schedules WHERE $1::text IS NULL OR schedule_id = $1 ORDER BY schedule_id)"},

    // Due schedules, locked for the transaction that fires them and advances them. $1 limit
    {stmt::due_schedules, R"(
SELECT schedule_id, workflow_name, input::text, cron, time_zone, misfire_policy, catchup_limit, misfire_grace_ms,
       {s}.epoch_us(next_fire_at) AS next_fire_us, {s}.epoch_us(prev_fire_at) AS prev_fire_us,
       {s}.epoch_us({now}) AS now_us
FROM {s}.schedules WHERE NOT paused AND next_fire_at <= {now}
ORDER BY next_fire_at LIMIT $1 FOR UPDATE SKIP LOCKED)"},

    // $1 id, $2 next fire, $3 previous fire, $4 runs started, $5 fires dropped
    {stmt::advance_schedule, R"(
UPDATE {s}.schedules
SET next_fire_at = {s}.from_us($2), prev_fire_at = {s}.from_us($3), fires_started = fires_started + $4,
    fires_dropped = fires_dropped + $5, updated_at = statement_timestamp()
WHERE schedule_id = $1)"},

    // Microseconds until the earliest active schedule is due (NULL when there is none).
    {stmt::next_schedule_in, R"(
SELECT {s}.epoch_us(min(next_fire_at)) - {s}.epoch_us({now}) AS due_in_us FROM {s}.schedules WHERE NOT paused)"},

    // A transactional activity's transaction: the guard row that keeps it from committing
    // unless complete_steps goes in with it (migration 17), then taken away just before. Taking it
    // also gives complete_steps the planner settings the engine's own sessions have, for this
    // transaction only (the session is the body's: its own statements keep the defaults).
    {stmt::open_guard, "INSERT INTO {s}.transaction_guards (xact) VALUES (pg_current_xact_id())"},
    {stmt::close_guard, R"(
WITH g AS (DELETE FROM {s}.transaction_guards WHERE xact = pg_current_xact_id() RETURNING 1)
SELECT (SELECT count(*) FROM g) AS guards, set_config('plan_cache_mode', 'force_generic_plan', true),
       set_config('enable_seqscan', 'off', true), set_config('enable_hashjoin', 'off', true),
       set_config('enable_mergejoin', 'off', true), set_config('jit', 'off', true))"},
};

}  // namespace

void prepare_statements(pqxx::connection& conn, const std::string& schema, const std::vector<std::string>& only,
                        const std::string& name_prefix) {
  const std::string s = quoted(schema);
  // db_now(), read once per statement into a first CTE; each use is a cheap scan of that one row.
  // A call to the SQL function itself is planned again on every execution (about 50 us each), and
  // a subquery on the clock table per use costs a table scan each (a step statement has ~20 uses).
  // The statements read the time with statement_timestamp(), not now(): the same in a statement of
  // its own, but a transactional activity's step commits at the end of the body's transaction,
  // and now() is when that began (its leases and times must be judged as the step commits).
  const std::string now = "(SELECT now FROM clock_now)";
  const std::string clock_cte =
      "clock_now AS MATERIALIZED (SELECT statement_timestamp() + skew AS now FROM " + s + ".clock)";
  auto with_clock = [&](std::string sql) {
    if (sql.find(now) == std::string::npos) return sql;
    const auto first = sql.find_first_not_of(" \n");
    if (sql.compare(first, 5, "WITH ") == 0) return sql.insert(first + 5, clock_cte + ",\n");
    return "WITH " + clock_cte + "\n" + sql;
  };
  auto with_names = [&](const char* sql) {
    return fmt::format(fmt::runtime(sql), fmt::arg("s", s), fmt::arg("now", now));
  };
  auto insert_tasks = [&](const char* from, const char* tasks, const char* owner, const char* margin,
                          const char* token) {
    return fmt::format(fmt::runtime(insert_tasks_sql), fmt::arg("s", s), fmt::arg("now", now), fmt::arg("from", from),
                       fmt::arg("tasks", tasks), fmt::arg("owner", owner), fmt::arg("margin", margin),
                       fmt::arg("token", token), fmt::arg("default_timeout_ms", stored_default_timeout_ms));
  };
  auto drop_unawaited = [&](const char* from, const char* status, const char* except) {
    return fmt::format(fmt::runtime(drop_unawaited_sql), fmt::arg("s", s), fmt::arg("from", from),
                       fmt::arg("status", status), fmt::arg("except", except));
  };
  auto claimed_json = [&](const char* from, const char* run) {
    return fmt::format(fmt::runtime(claimed_json_sql), fmt::arg("from", from), fmt::arg("run", run));
  };
  auto more_events = [&](const char* events, const char* skip) {
    return fmt::format(fmt::runtime(more_events_sql), fmt::arg("events", events), fmt::arg("skip", skip));
  };
  auto cancel_runs = [&](const char* from, const char* data, const char* channel) {
    return fmt::format(fmt::runtime(cancel_runs_sql), fmt::arg("s", s), fmt::arg("from", from), fmt::arg("data", data),
                       fmt::arg("channel", channel));
  };
  auto request_cancel = [&](const char* from, const char* reason, const char* channel, const char* prefix = "") {
    return fmt::format(fmt::runtime(request_cancel_sql), fmt::arg("s", s), fmt::arg("from", from),
                       fmt::arg("reason", reason), fmt::arg("channel", channel), fmt::arg("p", prefix));
  };
  const char* const orphans_reason = "'its parent run ended (parent-close policy: cancel)'";
  const std::string fast = with_names(fast_sql);
  // In commit_replay: the journal grew, or a message came, since the replay read them.
  const std::string replay_outdated = "(next_seq <> $8 OR ($16::int >= 0 AND messages_sent <> $16::int))";
  const std::string finishing_task = with_names(finishing_task_sql);
  const std::string holder_live = with_names(holder_live_sql);
  const std::string start_data = with_names(start_data_sql);
  const std::string pending_task = with_names(claimable_pending_task_sql);
  const std::string expired_task = with_names(claimable_expired_task_sql);
  const std::string runnable_workflow = with_names(claimable_runnable_workflow_sql);
  const std::string waking_workflow = with_names(claimable_waking_workflow_sql);
  for (const auto& [name, sql] : statements) {
    const std::string text = fmt::format(
        fmt::runtime(sql), fmt::arg("s", s), fmt::arg("now", now), fmt::arg("fast", fast),
        fmt::arg("replay_outdated", replay_outdated), fmt::arg("start_data", start_data),
        fmt::arg("async_commit", async_commit_sql),
        fmt::arg("insert_tasks", insert_tasks("w", "$10::jsonb", "$13", "$14", "$15")),
        fmt::arg("claimed_json", claimed_json("t", "$1::uuid")),
        fmt::arg("insert_tasks_of_steps", insert_tasks("k", "f.tasks", "$2", "$3", "f.claim_token")),
        fmt::arg("claimed_json_of_steps", claimed_json("nt", "w.run_id")), fmt::arg("holder_live", holder_live),
        fmt::arg("drop_unawaited", drop_unawaited("w", "$4", "NULL::bigint")),
        fmt::arg("drop_unawaited_of_steps", drop_unawaited("k", "f.wf_status", "f.task_id")),
        fmt::arg("pending_task", pending_task), fmt::arg("expired_task", expired_task),
        fmt::arg("runnable_workflow", runnable_workflow), fmt::arg("waking_workflow", waking_workflow),
        fmt::arg("finishing_task", finishing_task), fmt::arg("finished_task", finished_task_sql),
        fmt::arg("more_of_replay", more_events("$3::jsonb", "1")),
        fmt::arg("more_of_steps", more_events("w.events", "0")),
        fmt::arg("default_timeout_ms", stored_default_timeout_ms),
        fmt::arg("default_retry_horizon_ms", stored_default_retry_horizon_ms),
        fmt::arg("cancel_one", cancel_runs("r", "jsonb_build_object('terminated', true)", "$2")),
        fmt::arg("request_one", request_cancel("r", "$2::text", "$3")),
        fmt::arg("request_children", request_cancel("r", orphans_reason, "$2")),
        fmt::arg("request_orphans", request_cancel("r", orphans_reason, "$1")),
        fmt::arg(
            "request_own_children",
            request_cancel("asked", "'its parent run was cancelled (parent-close policy: cancel)'", "$21", "asked_")),
        fmt::arg("orphan", with_names(orphan_sql)),
        fmt::arg("replayed_seq", "w.next_seq - w.replay_lag AS replayed_seq"));
    if (only.empty() || std::find(only.begin(), only.end(), name) != only.end()) {
      conn.prepare(name_prefix + name, with_clock(text));
    }
  }
}

}  // namespace durable::pg
