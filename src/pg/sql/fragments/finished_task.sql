-- What complete_steps goes on with of each task it finished (deleted or marked failed).
k.task_id, k.lease_token, k.run_id, k.workflow_id, k.step, k.name,
    k.attempt - CASE WHEN i.record THEN 0 ELSE 1 END AS attempt,  -- a lost lease's claim ran nothing
    k.attempt_started_at, k.idempotency_key,
    CASE WHEN k.idempotency_key IS NOT NULL THEN coalesce(i.fp, md5(k.input::text)) END AS fp, i.outcome, i.result,
    i.error_type, i.error_message, i.record, i.expected_seq, i.replayed_seq, i.run_id AS replay_run, i.claim_token, i.events, i.tasks,
    i.wf_status, i.wf_result, i.wf_error_type, i.wf_error_message, i.wake_at_us
