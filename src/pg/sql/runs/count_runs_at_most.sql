-- How many runs of each status pass the filter ($1 to $12, fragments/run_filter.sql), each count
-- read no further than $13 rows (a status with more shows $13).
SELECT 'running' AS status, (SELECT count(*) FROM (SELECT FROM {{s}}.workflows w
  WHERE {{run_filter}} AND w.status = 'running' LIMIT $13) AS x) AS n
UNION ALL
SELECT 'completed' AS status, (SELECT count(*) FROM (SELECT FROM {{s}}.workflows w
  WHERE {{run_filter}} AND w.status = 'completed' LIMIT $13) AS x) AS n
UNION ALL
SELECT 'failed' AS status, (SELECT count(*) FROM (SELECT FROM {{s}}.workflows w
  WHERE {{run_filter}} AND w.status = 'failed' LIMIT $13) AS x) AS n
UNION ALL
SELECT 'cancelled' AS status, (SELECT count(*) FROM (SELECT FROM {{s}}.workflows w
  WHERE {{run_filter}} AND w.status = 'cancelled' LIMIT $13) AS x) AS n
UNION ALL
SELECT 'continued' AS status, (SELECT count(*) FROM (SELECT FROM {{s}}.workflows w
  WHERE {{run_filter}} AND w.status = 'continued' LIMIT $13) AS x) AS n
