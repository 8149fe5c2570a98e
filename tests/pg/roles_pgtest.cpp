// Roles and privileges (docs/operations.md): an owner migrates the schema and grants; an engine
// role reads and writes its rows and changes nothing else; a reader role only reads. Each test
// makes its own three roles (TestRoles), named after its schema, and drops them at the end.
#include <catch2/catch.hpp>
#include <pqxx/pqxx>

#include "pg/migrations.hpp"
#include "support/test_db.hpp"
#include "support/test_roles.hpp"
#include "support/test_workflows.hpp"

using namespace durable;
using namespace durable::test;
using namespace std::chrono_literals;

TEST_CASE("an engine under a role granted only the schema's rows runs every kind of step and changes nothing else",
          "[roles]") {
  TestDb db;
  TestRoles roles(db);
  roles.migrate_and_grant();
  Engine engine(roles.options_of(roles.engine));  // migrate_schema left on: at this version it migrates nothing
  register_all(engine);
  engine.add_queue({"tenants", 2, 1});  // the lines' trigger, the queue's advisory lock
  engine.start();

  auto hello = engine.start_workflow<HelloWorkflow>("roles-hello", std::string("engine"));
  auto sleeper = engine.start_workflow<SleepWorkflow>("roles-sleep", 50);
  auto approval = engine.start_workflow<ApprovalWorkflow>("roles-approval", 10'000);
  auto child = engine.start_workflow<CallChildWorkflow>("roles-parent", CallChildInput{"roles-child"});
  StartOptions queued;
  queued.queue = "tenants";
  queued.concurrency_key = "acme";
  auto on_queue = engine.start_workflow<SlowWorkflow>("roles-queued", 10, queued);
  auto cancelled = engine.start_workflow<ApprovalWorkflow>("roles-cancelled", 60'000);
  engine.send("roles-approval", "approval", std::string("ana"));
  CHECK(hello.result(20s) == "hello, engine");
  CHECK(sleeper.result(20s)["slept_ms"] >= 50);
  CHECK(approval.result(20s) == "approved by ana");
  CHECK(child.result(20s) == "result 2");
  CHECK(on_queue.result(20s) == 10);
  CHECK(cancelled.cancel("no longer needed"));
  CHECK(wait_until([&] { return cancelled.status() == WorkflowStatus::cancelled; }, 20s));
  const OperatorAction ops{"ana", "retention"};
  CHECK(engine.runs().prune(std::chrono::system_clock::now() + 1h, ops).runs >= 6);

  // It may change no schema object: every DDL is the owner's.
  const std::string as_engine = roles.url_of(roles.engine);
  CHECK(sqlstate_of(as_engine, db.schema(), "CREATE TABLE {s}.extra (i int)") == "42501");
  CHECK(sqlstate_of(as_engine, db.schema(), "ALTER TABLE {s}.workflows ADD COLUMN extra int") == "42501");
  CHECK(sqlstate_of(as_engine, db.schema(), "TRUNCATE {s}.journal") == "42501");
  CHECK(sqlstate_of(as_engine, db.schema(), "DROP TABLE {s}.journal") == "42501");
  CHECK(sqlstate_of(as_engine, db.schema(), "CREATE SCHEMA roles_stray") == "42501");
}

TEST_CASE("a reader role reads runs and their history, and an action is refused with what to grant", "[roles]") {
  TestDb db;
  TestRoles roles(db);
  roles.migrate_and_grant();
  Engine engine(roles.options_of(roles.engine));
  register_all(engine);
  engine.start();
  auto run = engine.start_workflow<HelloWorkflow>("read-me", std::string("reader"));
  CHECK(run.result(20s) == "hello, reader");
  auto waiting = engine.start_workflow<ApprovalWorkflow>("still-waiting", 60'000);

  EngineOptions read_only = roles.options_of(roles.reader);
  read_only.migrate_schema = false;  // as `durable` and the console run
  Engine reader(read_only);
  CHECK(reader.runs().list().runs.size() == 2);
  CHECK(reader.runs().get(run.run_id()).status == WorkflowStatus::completed);
  CHECK_FALSE(reader.runs().history(run.run_id()).events.empty());
  CHECK(reader.queues().list().empty());
  try {
    reader.runs().cancel(waiting.run_id(), {"mallory", "not mine to cancel"});
    FAIL("a reader cancelled a run");
  } catch (const DatabaseRefused& e) {
    CHECK(e.sqlstate() == "42501");
    CHECK_THAT(e.what(), Catch::Contains("--engine-role ROLE"));
  }
  CHECK(waiting.status() == WorkflowStatus::running);
  CHECK(sqlstate_of(roles.url_of(roles.reader), db.schema(), "DELETE FROM {s}.journal") == "42501");
  waiting.cancel("test over");
}

TEST_CASE("an engine role on a schema behind its build is told to migrate as the owner", "[roles]") {
  TestDb db;
  TestRoles roles(db);
  {
    pqxx::connection conn(roles.url_of(roles.owner));
    pg::migrate(conn, db.schema(), pg::latest_schema_version() - 1);
  }
  grant_schema_roles(roles.url_of(roles.owner), db.schema(), {{roles.engine}, {}});
  Engine engine(roles.options_of(roles.engine));
  register_all(engine);
  try {
    engine.start();
    FAIL("an engine role migrated the schema");
  } catch (const DatabaseError& e) {
    CHECK_THAT(e.what(), Catch::Contains(fmt::format("at version {}", pg::latest_schema_version() - 1)) &&
                             Catch::Contains("durable migrate") && Catch::Contains("owner"));
  }
  CHECK(schema_version(db.url(), db.schema()).current == pg::latest_schema_version() - 1);
}

TEST_CASE("grants of a role that does not exist, or by a role that does not own the schema, are refused",
          "[roles][bad_input]") {
  TestDb db;
  TestRoles roles(db);
  CHECK_THROWS_WITH(grant_schema_roles(roles.url_of(roles.owner), db.schema(), {{roles.engine}, {}}),
                    Catch::Contains("migrate it first"));
  migrate_schema(roles.url_of(roles.owner), db.schema());
  CHECK_THROWS_WITH(grant_schema_roles(roles.url_of(roles.owner), db.schema(), {{roles.engine, "no_such_role"}, {}}),
                    Catch::Contains("role 'no_such_role' does not exist"));
  // Nothing granted: the engine role still may not read.
  CHECK(sqlstate_of(roles.url_of(roles.engine), db.schema(), "SELECT * FROM {s}.workflows") == "42501");
  CHECK_THROWS_WITH(grant_schema_roles(roles.url_of(roles.engine), db.schema(), {{roles.engine}, {}}),
                    Catch::Contains("only the schema's owner"));
  CHECK(sqlstate_of(roles.url_of(roles.engine), db.schema(), "SELECT * FROM {s}.workflows") == "42501");
}

TEST_CASE("a table the owner adds after the grant (a later migration's) is the engine's and the reader's at once",
          "[roles]") {
  TestDb db;
  TestRoles roles(db);
  // Granted by the owner, or by a superuser (a member of every role): the default privileges are
  // the owner's either way, as the owner runs the migrations.
  const bool by_superuser = GENERATE(false, true);
  INFO("granted by a superuser: " << by_superuser);
  migrate_schema(roles.url_of(roles.owner), db.schema());
  grant_schema_roles(by_superuser ? db.url() : roles.url_of(roles.owner), db.schema(),
                     {{roles.engine}, {roles.reader}});
  CHECK(sqlstate_of(roles.url_of(roles.owner), db.schema(), "CREATE TABLE {s}.added_later (i int)") == "");
  CHECK(sqlstate_of(roles.url_of(roles.engine), db.schema(), "INSERT INTO {s}.added_later VALUES (1)") == "");
  CHECK(sqlstate_of(roles.url_of(roles.reader), db.schema(), "SELECT * FROM {s}.added_later WHERE false") == "");
  CHECK(sqlstate_of(roles.url_of(roles.reader), db.schema(), "DELETE FROM {s}.added_later") == "42501");
  CHECK(sqlstate_of(roles.url_of(roles.engine), db.schema(), "DROP TABLE {s}.added_later") == "42501");
}
