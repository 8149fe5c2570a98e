-- Runs retention may delete: ended before $1 (us).
status <> 'running' AND ended_at < {{s}}.from_us($1)
