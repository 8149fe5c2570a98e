-- What a claim whose answer was lost had taken: $1 claim token
SELECT workflow_id, run_id::text, name, next_seq, lease_token, {{s}}.epoch_us({{now}}) AS now_us, {{start_data}},
       {{replayed_seq}}
FROM {{s}}.workflows w WHERE claim_token = $1 AND status = 'running' AND lease_until >= {{now}}
