-- A transactional activity's transaction: the guard row that keeps it from committing
-- unless complete_steps goes in with it (migration 17), then taken away just before. Taking it
-- also gives complete_steps the planner settings the engine's own sessions have, for this
-- transaction only (the session is the body's: its own statements keep the defaults).
INSERT INTO {{s}}.transaction_guards (xact) VALUES (pg_current_xact_id())
