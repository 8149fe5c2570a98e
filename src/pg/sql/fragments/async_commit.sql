-- Claims only take leases: losing one in a server crash equals its lease running out, and every
-- later write is fenced. So a claim's transaction need not wait for the WAL flush; set by the
-- claim itself, in the rows it returns (a claim that took nothing writes nothing to flush).
set_config('synchronous_commit', 'off', true) AS async_commit
