-- The unreceived messages of topic $2 in run $1's inbox after seq $3, oldest first, at most
-- $4; every row carries the run's messages_sent as this snapshot saw it (one row, with NULL
-- message columns, when there are none).
SELECT w.messages_sent, m.seq, {{s}}.epoch_us(m.sent_at) AS sent_us, m.message_id::text, m.payload::text
FROM {{s}}.workflows w LEFT JOIN LATERAL (
  SELECT seq, sent_at, message_id, payload FROM {{s}}.messages
  WHERE run_id = w.run_id AND topic = $2 AND seq > $3 AND received_step IS NULL ORDER BY seq LIMIT $4) m ON true
WHERE w.run_id = $1::uuid ORDER BY m.seq
