-- How many runs ended before $1 (us): what a prune would delete.
SELECT count(*) FROM {{s}}.workflows WHERE {{due_runs}}
