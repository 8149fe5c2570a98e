-- After work of queue $1 was taken (CTE `taken`: its key, and its turn), each key served keeps
-- the turn of its latest one, and the queue's turn ({{turn}}) becomes the one just before the
-- latest turn served. Keys whose turn the queue's has reached need no row: they start there anyway.
taken_keys AS (SELECT key, max(turn) AS served FROM taken GROUP BY key),
served AS (
  INSERT INTO {{s}}.queue_keys (queue, attempt, concurrency_key, served)
  SELECT $1, {{attempt}}, key, served FROM taken_keys
  ON CONFLICT (queue, attempt, concurrency_key) DO UPDATE SET served = excluded.served),
turned AS (
  UPDATE {{s}}.queues SET {{turn}} = (SELECT max(served) - 1 FROM taken_keys)
  WHERE name = $1 AND EXISTS (SELECT 1 FROM taken_keys)),
caught_up AS (
  DELETE FROM {{s}}.queue_keys k
  WHERE k.queue = $1 AND k.attempt = {{attempt}} AND k.served <= (SELECT max(served) - 1 FROM taken_keys)
    AND k.concurrency_key NOT IN (SELECT key FROM taken_keys))
