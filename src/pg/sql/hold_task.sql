-- A transactional body's step, as it is handed to its shared transaction (activity_transaction.cpp):
-- `held` when task (run $1, step $2) is still leased by $3 and live, and then locked until the
-- group commits, so the group's complete_steps finishes it (nothing else can take the lease
-- meanwhile); `guarded` when the session is still in the transaction its guard began (a body that
-- ran ROLLBACK left it).
-- $1 run id, $2 step, $3 lease token
WITH k AS (
  SELECT 1 FROM {{s}}.tasks k
  WHERE k.run_id = $1::uuid AND k.step = $2 AND k.lease_token = $3 AND k.status = 'running'
    AND k.lease_until >= {{now}}
  FOR NO KEY UPDATE)
SELECT EXISTS (SELECT 1 FROM {{s}}.transaction_guards WHERE xact = pg_current_xact_id_if_assigned()) AS guarded,
       EXISTS (SELECT 1 FROM k) AS held
