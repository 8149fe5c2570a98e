-- Run $1 in full.
SELECT {{run_summary_columns}}, {{run_info_columns}} FROM {{s}}.workflows w WHERE w.run_id = $1::uuid
