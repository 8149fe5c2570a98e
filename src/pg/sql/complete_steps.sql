-- Finishes a batch of tasks, at most one per workflow ($1, json array of rows as
-- jsonb_to_recordset below), each fenced by its lease. A finished task's outcome is journaled
-- (a completed task's row is deleted, its event says all; a failed one stays for a resume)
-- and its workflow made runnable; or, when the row carries the replay its outcome unblocks
-- (computed by this engine from its cached journal, for a journal of `expected_seq` events of
-- run `run_id`) and the workflow is still as that replay saw it ({{fast}}), the replay's events,
-- tasks and status are committed with it and the workflow goes on without a claim. A continued
-- workflow gets the row's claim token, so a retry after a lost answer can tell.
-- $1 rows, $2 owner, $3 lease margin ms, $4 workflows channel, $5 tasks channel, $6 ended channel,
-- $7 the owner's app version ('' none), recorded on a run continued (and so no longer blocked).
-- A row's `fp` is its input's fingerprint for idempotent_results when a codec is on (the engine's,
-- of the plaintext: the stored input is encoded); NULL: md5 of the stored input.
-- One row per input row: task id, finished, continued, base seq, tasks leased at once, now.
WITH i AS MATERIALIZED (
  SELECT * FROM jsonb_to_recordset($1::jsonb) AS x(
    task_id bigint, task_run uuid, step int, lease_token bigint, outcome text, result text, error_type text, error_message text, fp text, record boolean,
    expected_seq int, replayed_seq int, run_id uuid, claim_token text, events jsonb, tasks jsonb, wf_status text, wf_result text,
    wf_error_type text, wf_error_message text, wake_at_us bigint)),
td AS (
  DELETE FROM {{s}}.tasks k USING i
  WHERE i.outcome = 'completed' AND {{finishing_task}}
  RETURNING {{finished_task}}),
tf AS (
  UPDATE {{s}}.tasks k
  SET status = i.outcome, error_type = nullif(i.error_type, ''), error_message = nullif(i.error_message, ''),
      lease_until = NULL, updated_at = statement_timestamp()
  FROM i
  WHERE i.outcome <> 'completed' AND {{finishing_task}}
  RETURNING {{finished_task}}),
t AS (SELECT * FROM td UNION ALL SELECT * FROM tf),
a AS (
  INSERT INTO {{s}}.attempts (task_id, run_id, step, attempt, started_at, ended_at, outcome, error_type, error_message)
  SELECT task_id, run_id, step, attempt, attempt_started_at, {{now}}, outcome, nullif(error_type, ''),
         nullif(error_message, '')
  FROM t WHERE record AND outcome <> 'completed'  -- a successful attempt is in its completed event
  ON CONFLICT DO NOTHING),
ir AS (
  INSERT INTO {{s}}.idempotent_results (activity, key, result, input_fingerprint, workflow_id, task_id)
  SELECT name, idempotency_key, result::jsonb, fp, workflow_id, task_id FROM t
  WHERE outcome = 'completed' AND idempotency_key IS NOT NULL
  ON CONFLICT DO NOTHING),
l AS (
  DELETE FROM {{s}}.idempotency_locks o USING t
  WHERE t.idempotency_key IS NOT NULL AND o.activity = t.name AND o.key = t.idempotency_key
    AND o.task_id = t.task_id AND o.lease_token = t.lease_token AND NOT o.outlives_task  -- else its body runs on
  RETURNING o.task_id, o.waiting),
w AS (
  UPDATE {{s}}.workflows wf
  SET next_seq = wf.next_seq + 1 + CASE WHEN {{fast}} THEN jsonb_array_length(t.events) ELSE 0 END,
      status = CASE WHEN {{fast}} THEN t.wf_status ELSE wf.status END,
      result = CASE WHEN {{fast}} THEN t.wf_result::jsonb ELSE wf.result END,
      error_type = CASE WHEN {{fast}} THEN nullif(t.wf_error_type, '') ELSE wf.error_type END,
      error_message = CASE WHEN {{fast}} THEN nullif(t.wf_error_message, '') ELSE wf.error_message END,
      wake_at = CASE WHEN {{fast}} THEN {{s}}.from_us(nullif(t.wake_at_us, -1)) ELSE wf.wake_at END,
      ended_at = CASE WHEN {{fast}} AND t.wf_status <> 'running' THEN statement_timestamp() ELSE wf.ended_at END,
      lease_token = CASE WHEN {{fast}} THEN NULL ELSE wf.lease_token END,
      lease_owner = CASE WHEN {{fast}} THEN NULL ELSE wf.lease_owner END,
      lease_until = CASE WHEN {{fast}} THEN NULL ELSE wf.lease_until END,
      claim_token = CASE WHEN {{fast}} THEN t.claim_token ELSE wf.claim_token END,
      app_version = CASE WHEN {{fast}} THEN nullif($7, '') ELSE wf.app_version END,
      blocked_at = CASE WHEN {{fast}} THEN NULL ELSE wf.blocked_at END,
      blocked = CASE WHEN {{fast}} THEN NULL ELSE wf.blocked END,
      replay_lag = CASE WHEN {{fast}} THEN jsonb_array_length(t.events) ELSE wf.replay_lag + 1 END,
      runnable = NOT {{fast}}, updated_at = statement_timestamp(),
      runnable_since = CASE WHEN NOT {{fast}} AND NOT wf.runnable THEN statement_timestamp() ELSE wf.runnable_since END
  FROM t WHERE wf.run_id = t.run_id AND (wf.status = 'running') IS TRUE
  RETURNING wf.workflow_id, wf.run_id, t.task_id, t.step, t.name, t.attempt, t.attempt_started_at, t.outcome, t.result,
            t.error_type,
            t.error_message, t.events, t.tasks, t.wf_status, t.claim_token,
            coalesce(wf.claim_token = t.claim_token, false) AS fast,
            wf.next_seq - 1 - CASE WHEN coalesce(wf.claim_token = t.claim_token, false)
                                   THEN jsonb_array_length(t.events) ELSE 0 END AS base),
e AS (  -- one row: the outcome, then the replay's events it continued with
  INSERT INTO {{s}}.journal (run_id, seq, kind, step, name, data, more)
  SELECT run_id, base, CASE WHEN outcome = 'completed' THEN 'activity_completed' ELSE 'activity_failed' END, step,
         name, CASE WHEN outcome = 'completed' THEN jsonb_build_object('result', result::jsonb, 'attempts', attempt,
                                                                       'started_us', {{s}}.epoch_us(attempt_started_at))
                    ELSE jsonb_build_object('error_type', error_type, 'error_message', error_message,
                                            'attempts', attempt) END,
         CASE WHEN fast THEN {{more_of_steps}} END
  FROM w),
k AS (SELECT * FROM w WHERE w.fast),
c AS ({{drop_unawaited_of_steps}}),
nt AS ({{insert_tasks_of_steps}}),
n AS (SELECT pg_notify($4, '') FROM w WHERE NOT w.fast LIMIT 1),
m AS (SELECT pg_notify($5, '') WHERE EXISTS (SELECT 1 FROM nt WHERE status = 'pending')),
d AS (SELECT pg_notify($6, k.run_id::text) FROM k WHERE k.wf_status <> 'running')  -- each ended run's waiters
SELECT i.task_id, t.task_id IS NOT NULL AS finished, coalesce(w.fast, false) AS continued, w.base,
       {{claimed_json_of_steps}} AS claimed, {{s}}.epoch_us({{now}}) AS now_us,
       (SELECT count(*) FROM n) + (SELECT count(*) FROM m) + (SELECT count(*) FROM d) AS notified,
       coalesce((SELECT bool_or(l.waiting) FROM l WHERE l.task_id = i.task_id), false) AS key_waiters
FROM i LEFT JOIN t ON t.task_id = i.task_id LEFT JOIN w ON w.task_id = i.task_id
