-- Room on each page of tasks (as workflows got in 3), whose rows a step updates several
-- times (leased, finished): a new row version that stays on its page is logged as the bytes
-- that changed, not the whole row. Measured: 54 % of the non-HOT task updates went to another
-- page without it (docs/benchmarks.md). Pages written from now on keep the room.

ALTER TABLE {{s}}.tasks SET (fillfactor = 80);
