-- Transactional activities (durable/pqxx.hpp). A body's transaction inserts a guard row
-- first; a deferred constraint trigger refuses to commit a transaction that still has its guard
-- (SQLSTATE DUR02), and only durable's completion of the step takes it away, in the same
-- transaction. So the body's writes commit with its journaled result or not at all, even when
-- the body itself runs COMMIT. Unlogged: a guard never outlives its transaction. The defaults
-- of the times rows are written at become statement_timestamp(): the same for a statement of
-- its own, but a step that commits at the end of a body's transaction is written then, not
-- when the transaction began. A new table and new defaults: runs in flight upgrade in place.

CREATE UNLOGGED TABLE {{s}}.transaction_guards (xact xid8 PRIMARY KEY);
CREATE FUNCTION {{s}}.refuse_unguarded_commit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM {{s}}.transaction_guards WHERE xact = NEW.xact) THEN
    RAISE EXCEPTION USING ERRCODE = 'DUR02',
      MESSAGE = 'durable: a transactional activity''s transaction was committed by its body',
      HINT = 'return from the body instead: durable commits its writes together with its result';
  END IF;
  RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER commit_with_step AFTER INSERT ON {{s}}.transaction_guards
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION {{s}}.refuse_unguarded_commit();
ALTER TABLE {{s}}.workflows ALTER COLUMN created_at SET DEFAULT statement_timestamp(),
  ALTER COLUMN updated_at SET DEFAULT statement_timestamp(),
  ALTER COLUMN runnable_since SET DEFAULT statement_timestamp();
ALTER TABLE {{s}}.journal ALTER COLUMN created_at SET DEFAULT statement_timestamp();
ALTER TABLE {{s}}.tasks ALTER COLUMN created_at SET DEFAULT statement_timestamp(),
  ALTER COLUMN updated_at SET DEFAULT statement_timestamp();
ALTER TABLE {{s}}.idempotent_results ALTER COLUMN created_at SET DEFAULT statement_timestamp();
