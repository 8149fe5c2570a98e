-- The workflow_started event's data of claimed workflow `w` when that event is its whole journal.
CASE WHEN w.next_seq = 1 THEN
   (SELECT data::text FROM {{s}}.journal j WHERE j.run_id = w.run_id AND j.seq = 0) END AS start_data
