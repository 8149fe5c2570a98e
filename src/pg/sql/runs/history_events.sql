-- The events of run $1 from seq $2 on, at most $3 (a journal row holds one or more events; the
-- rows read start at the one holding $2).
SELECT j.seq, j.kind, coalesce(j.step, -1) AS step, coalesce(j.name, '') AS name,
       {{s}}.epoch_us(j.created_at) AS at_us, j.data::text AS data
FROM {{s}}.journal_events j
WHERE j.run_id = $1::uuid AND j.seq >= $2 AND j.row_seq >= (SELECT coalesce(max(r.seq), 0) FROM {{s}}.journal r
                                                            WHERE r.run_id = $1::uuid AND r.seq <= $2)
ORDER BY j.seq LIMIT $3
