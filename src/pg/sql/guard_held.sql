-- In a transaction that transactional bodies share (pg/transaction_group.hpp), as a body returns:
-- whether the session is still in the transaction its guard began (a body that ran COMMIT or
-- ROLLBACK left it). A lease the body lost shows at the group's complete_steps, which then
-- commits nothing of the group.
SELECT EXISTS (SELECT 1 FROM {{s}}.transaction_guards WHERE xact = pg_current_xact_id_if_assigned()) AS guarded
