-- Asks run $1 to cancel, with reason $2: $3 workflows channel. `requested` 1 when this call
-- asked, 0 when the run had been asked already or ended. Its status is read by a statement of
-- its own after this one: a status read here would be of the snapshot this statement began
-- with, from before a commit it waited for (a continue-as-new ending the run, say).
WITH r AS (SELECT $1::uuid AS run_id),
{{request_one}}
SELECT (SELECT count(*) FROM w) AS requested, (SELECT count(*) FROM n) AS notified
