#include <catch2/catch.hpp>

#include "pg/migrations.hpp"
#include "support/expect.hpp"
#include "support/test_db.hpp"
#include "support/test_workflows.hpp"

using namespace durable;
using namespace durable::test;

TEST_CASE("ten engines starting at once in one process share one migration", "[pg][migrations]") {
  TestDb db;
  std::vector<std::thread> threads;
  std::atomic<int> up{0};
  for (int i = 0; i < 10; ++i) {
    threads.emplace_back([&] {
      Engine engine(db.options());
      register_all(engine);
      engine.start();
      ++up;
    });
  }
  for (auto& t : threads) t.join();
  CHECK(up == 10);
  CHECK(db.count("SELECT count(*) FROM {s}.schema_version") == pg::latest_schema_version());  // each migration once
}

TEST_CASE("an engine on a migrated schema keeps its data and migrates nothing again", "[pg][migrations]") {
  TestDb db;
  {
    Engine engine(db.options());
    register_all(engine);
    engine.start_workflow<HelloWorkflow>("kept", "x");  // started, never run: no engine was started
  }
  Engine engine(db.options());
  register_all(engine);
  engine.start();
  CHECK(engine.workflow<HelloWorkflow>("kept").result(30s) == "hello, x");
  CHECK(db.count("SELECT count(*) FROM {s}.schema_version") == pg::latest_schema_version());  // each migration once
}

TEST_CASE("a schema at version 1 is upgraded in place, its runs kept", "[pg][migrations]") {
  TestDb db;
  {
    Engine engine(db.options());
    register_all(engine);
    engine.start_workflow<HelloWorkflow>("from-v1", "y");
  }
  // Back to what a version-1 build left: no schedules table, no per-name task indexes, workflows
  // claimed by updated_at and found by wake time across names, foreign keys.
  db.query(
      "DROP TABLE {s}.schedules; DROP INDEX {s}.tasks_available_by_name, {s}.tasks_leased_by_name; "
      "CREATE INDEX tasks_available ON {s}.tasks (available_at) WHERE status = 'pending'; "
      "CREATE INDEX tasks_leased ON {s}.tasks (lease_until) WHERE status = 'running'; "
      "ALTER TABLE {s}.workflows DROP COLUMN runnable_since, RESET (fillfactor); "
      "CREATE INDEX workflows_runnable ON {s}.workflows (updated_at) WHERE status = 'running' AND runnable; "
      "DROP INDEX {s}.workflows_waking_by_name; "
      "CREATE INDEX workflows_waking ON {s}.workflows (wake_at) WHERE status = 'running' AND wake_at IS NOT NULL; "
      "ALTER TABLE {s}.journal ADD FOREIGN KEY (workflow_id) REFERENCES {s}.workflows ON DELETE CASCADE; "
      "ALTER TABLE {s}.tasks ADD FOREIGN KEY (workflow_id) REFERENCES {s}.workflows ON DELETE CASCADE; "
      "ALTER TABLE {s}.attempts ADD FOREIGN KEY (task_id) REFERENCES {s}.tasks ON DELETE CASCADE; "
      "DROP INDEX {s}.tasks_waiting_for_key; ALTER TABLE {s}.idempotency_locks DROP COLUMN waiting; "
      "DROP TABLE {s}.lease_token_blocks; ALTER TABLE {s}.tasks RESET (fillfactor); "
      "DELETE FROM {s}.schema_version WHERE version > 1");
  Engine engine(db.options());
  register_all(engine);
  engine.start();
  CHECK(engine.workflow<HelloWorkflow>("from-v1").result(30s) == "hello, y");
  CHECK(db.count("SELECT max(version) FROM {s}.schema_version") == pg::latest_schema_version());
  CHECK(engine.schedules().list().empty());
}

TEST_CASE("an engine on a schema newer than this build refuses to start and is destroyed cleanly", "[pg][migrations]") {
  TestDb db;
  {
    Engine first(db.options());
    first.start();  // creates the schema
  }
  db.query("INSERT INTO {s}.schema_version (version) VALUES (" + std::to_string(pg::latest_schema_version() + 1) + ")");
  {
    Engine engine(db.options());
    register_all(engine);
    expect_throw<DatabaseError>([&] { engine.start(); }, "newer than this build knows", "upgrade durable");
  }  // its destructor stops an engine whose start() failed before any thread ran
  CHECK(db.count("SELECT max(version) FROM {s}.schema_version") == pg::latest_schema_version() + 1);
}

TEST_CASE(
    "a schema at version 6 with runs in flight upgrades in place, and its runs complete under fresh fencing tokens",
    "[pg][migrations]") {
  TestDb db;
  {
    Engine engine(db.options());
    register_all(engine);
    for (int i = 0; i < 5; ++i) engine.start_workflow<ChainWorkflow>("v6-run-" + std::to_string(i), i);
  }
  // Back to version 6, with tokens of the old sequence handed out already (leases in flight).
  db.query(
      "DROP TABLE {s}.lease_token_blocks; DROP INDEX {s}.tasks_waiting_for_key; "
      "ALTER TABLE {s}.idempotency_locks DROP COLUMN waiting; SELECT setval('{s}.lease_tokens', 5000); "
      "ALTER TABLE {s}.tasks RESET (fillfactor); DELETE FROM {s}.schema_version WHERE version > 6");
  Engine engine(db.options());
  register_all(engine);
  engine.start();
  for (int i = 0; i < 5; ++i) CHECK(engine.workflow<ChainWorkflow>("v6-run-" + std::to_string(i)).result(30s) == i + 5);
  CHECK(db.count("SELECT max(version) FROM {s}.schema_version") == pg::latest_schema_version());
  // Every lease taken since is from the new blocks, far above anything the old sequence gave out.
  CHECK(
      db.count(
          "SELECT count(*) FROM {s}.tasks WHERE lease_token IS NOT NULL AND lease_token <= 5000 + (1::bigint << 40)") ==
      0);
  CHECK(db.count("SELECT count(*) FROM {s}.tasks WHERE status = 'completed'") == 25);
  // Version 8: room on each page of tasks.
  CHECK(db.count("SELECT count(*) FROM pg_class WHERE oid = '{s}.tasks'::regclass AND "
                 "reloptions @> ARRAY['fillfactor=80']") == 1);
}
