
WITH g AS (DELETE FROM {{s}}.transaction_guards WHERE xact = pg_current_xact_id() RETURNING 1)
SELECT (SELECT count(*) FROM g) AS guards, set_config('plan_cache_mode', 'force_generic_plan', true),
       set_config('enable_seqscan', 'off', true), set_config('enable_hashjoin', 'off', true),
       set_config('enable_mergejoin', 'off', true), set_config('jit', 'off', true)
