-- Locks run $1's row against deletion for this transaction (a fork copies from it); no row: gone.
SELECT 1 FROM {{s}}.workflows WHERE run_id = $1::uuid FOR SHARE
