-- Deletes the stored results of idempotency keys created before $1 (us); one row per result.
DELETE FROM {{s}}.idempotent_results WHERE created_at < {{s}}.from_us($1) RETURNING 1
