-- Which of these queue names ($1, json array) are defined.
SELECT name FROM {{s}}.queues WHERE name IN (SELECT jsonb_array_elements_text($1::jsonb))
