-- Whether line `l` (queue_lines) of queue $1 has a run to admit now (admissible_run.sql) and its
-- key room for it (key_room.sql, in CTEs q, room, running and key_rated). Scalar subqueries with
-- a LIMIT, so that each is one probe of an index for this line (an EXISTS may be planned as a hash
-- of every queued run of the queue).
((SELECT {{run_key_room}} FROM q, (SELECT l.concurrency_key AS key) k
  LEFT JOIN running r ON r.key = k.key LEFT JOIN key_rated kr ON kr.key = k.key) > 0
 AND (SELECT true FROM {{s}}.workflows w
      WHERE w.queue = $1 AND w.concurrency_key = l.concurrency_key AND w.priority = l.priority
        AND w.status = 'running' AND w.queued AND {{admissible}}
      LIMIT 1) IS NOT NULL)
