-- In lock_key's ON CONFLICT: the existing lock row (its latest version, locked by the statement)
-- is held until its own held_until: its holder's lease (moved by the holder's heartbeats), or a
-- hold its engine renews while the body runs on after its task let go (timed out, dropped,
-- handed back). Judged by the row alone, never by the holder's task row, which this statement's
-- snapshot may show from before the holder was claimed (two bodies ran so under load). A row
-- from before version 18 (held_until NULL) is judged by its holder's lease, as it was then.
(idempotency_locks.held_until >= {{now}} OR (idempotency_locks.held_until IS NULL
    AND EXISTS (
      SELECT 1 FROM {{s}}.tasks x
      WHERE x.run_id = idempotency_locks.run_id AND x.step = idempotency_locks.step
        AND x.lease_token = idempotency_locks.lease_token AND x.status = 'running' AND x.lease_until >= {{now}}
        AND NOT (x.run_id = $1::uuid AND x.step = $3))))
