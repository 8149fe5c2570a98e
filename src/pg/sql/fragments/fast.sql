-- A workflow row `wf` that step `t` may continue in place: journal as long as the replay assumed,
-- the same run, and no live replay lease.
(wf.next_seq = t.expected_seq AND wf.run_id = t.replay_run
        AND wf.next_seq - wf.replay_lag = t.replayed_seq AND (wf.lease_until IS NULL OR wf.lease_until < {{now}}))
