-- How many runs of each status pass the filter ($1 to $12, fragments/run_filter.sql).
SELECT w.status, count(*) AS n FROM {{s}}.workflows w WHERE {{run_filter}} GROUP BY w.status
