-- A transactional body's step, as its body returns in a shared transaction
-- (pg/transaction_group.hpp): `leased` when task (run $1, step $2) is still leased by $3 and
-- live; `guarded` when the session is still in the transaction its guard began (a body that ran
-- ROLLBACK left it). No lock: a lease lost after this is found by the group's complete_steps,
-- and then nothing of the group commits.
-- $1 run id, $2 step, $3 lease token
SELECT EXISTS (SELECT 1 FROM {{s}}.transaction_guards WHERE xact = pg_current_xact_id_if_assigned()) AS guarded,
       EXISTS (SELECT 1 FROM {{s}}.tasks k
               WHERE k.run_id = $1::uuid AND k.step = $2 AND k.lease_token = $3 AND k.status = 'running'
                 AND k.lease_until >= {{now}}) AS leased
