-- A workflow row `wf` that step `t` may continue in place: journal as long as the replay assumed,
-- the same run, no live replay lease, and its workflow type not paused (`paused.any`: whether any
-- workflow type is, read once per statement, so that nothing more is read when none is).
(wf.next_seq = t.expected_seq AND wf.run_id = t.replay_run
        AND wf.next_seq - wf.replay_lag = t.replayed_seq AND (wf.lease_until IS NULL OR wf.lease_until < {{now}})
        AND NOT (paused.any AND {{paused_workflow}}))
