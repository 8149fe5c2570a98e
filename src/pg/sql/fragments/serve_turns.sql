-- After work of queue $1 was taken (CTE `taken`: its key, and its turn), each key served keeps
-- the turn of its latest one, and the queue's turn ({{turn}}) becomes a whole turn
-- ({{turn_unit}}) before the first turn of this admission (never less than it was): a key that
-- comes next starts there, and its first run falls in the round being served, not after it. Keys whose turn the queue's has reached need no row:
-- they start there anyway.
taken_keys AS (SELECT key, max(turn) AS served FROM taken GROUP BY key),
served AS (
  INSERT INTO {{s}}.queue_keys (queue, attempt, concurrency_key, served)
  SELECT $1, {{attempt}}, key, served FROM taken_keys
  ON CONFLICT (queue, attempt, concurrency_key) DO UPDATE SET served = excluded.served),
next_turn AS (SELECT greatest(q.turn, (SELECT min(turn) - {{turn_unit}} FROM taken)) AS turn FROM q),
turned AS (
  UPDATE {{s}}.queues SET {{turn}} = (SELECT turn FROM next_turn)
  WHERE name = $1 AND EXISTS (SELECT 1 FROM taken_keys)),
caught_up AS (
  DELETE FROM {{s}}.queue_keys k
  WHERE k.queue = $1 AND k.attempt = {{attempt}} AND k.served <= (SELECT turn FROM next_turn)
    AND k.concurrency_key NOT IN (SELECT key FROM taken_keys))
