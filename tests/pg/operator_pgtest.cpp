// What operator tools build on (the `durable` CLI and console): the schema's version and
// migration (durable/schema.hpp), engines that never migrate, a bounded wait for an unreachable
// server, and the schema-wide stats with its engines (durable/stats.hpp).
#include <catch2/catch.hpp>

#include "support/expect.hpp"
#include "support/test_db.hpp"
#include "support/test_workflows.hpp"

using namespace durable;
using namespace durable::test;

TEST_CASE("a schema's version reads 0 before migrating and the latest after, and migrating twice is a no-op",
          "[pg][schema]") {
  TestDb db;
  CHECK(schema_version(db.url(), db.schema()).current == 0);
  CHECK_FALSE(schema_version(db.url(), db.schema()).up_to_date());
  CHECK(migrate_schema(db.url(), db.schema()) == latest_schema_version());
  CHECK(migrate_schema(db.url(), db.schema()) == latest_schema_version());
  const SchemaVersion v = schema_version(db.url(), db.schema());
  CHECK(v.current == latest_schema_version());
  CHECK(v.up_to_date());
  CHECK(db.count("SELECT count(*) FROM {s}.schema_version") == latest_schema_version());
}

TEST_CASE("bad input to the schema functions is a typed error", "[pg][schema]") {
  TestDb db;
  CHECK_THROWS_AS(schema_version(db.url(), "Bad-Name"), InvalidSchemaName);
  CHECK_THROWS_AS(migrate_schema(db.url(), "1x"), InvalidSchemaName);
  // Nothing listens there: the answer is at once, not after a minute of retries.
  const auto started = std::chrono::steady_clock::now();
  CHECK_THROWS_AS(schema_version("host=127.0.0.1 port=1 dbname=none connect_timeout=2", db.schema()),
                  DatabaseUnavailable);
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds{10});
  CHECK_FALSE(db.schema_exists());
}

TEST_CASE("an engine with migrate_schema off refuses a schema behind this build, naming how to migrate",
          "[pg][schema]") {
  TestDb db;
  EngineOptions options = db.options();
  options.migrate_schema = false;
  Engine engine(options);
  engine.add<HelloWorkflow>();
  CHECK_THROWS_WITH(engine.runs().list(), Catch::Contains("durable migrate"));
  CHECK_THROWS_AS(engine.runs().list(), DatabaseError);
  CHECK_THROWS_AS(engine.start(), DatabaseError);
  CHECK(schema_version(db.url(), db.schema()).current == 0);  // it wrote nothing
  migrate_schema(db.url(), db.schema());
  Engine after(options);
  CHECK(after.runs().list().runs.empty());
}

TEST_CASE("database work against an unreachable server gives up after database_unavailable_after", "[pg][schema]") {
  EngineOptions options;
  options.database_url = "host=127.0.0.1 port=1 dbname=none connect_timeout=1";
  options.database_unavailable_after = std::chrono::milliseconds{300};
  Engine engine(options);
  const auto started = std::chrono::steady_clock::now();
  CHECK_THROWS_AS(engine.runs().list(), DatabaseUnavailable);
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds{5});
  options.database_unavailable_after = std::chrono::milliseconds{0};
  CHECK_THROWS_AS(Engine(options), InvalidOptions);
}

TEST_CASE("stats show runs by status, blocked and oldest running runs, queues, and each engine's load", "[pg][stats]") {
  const WorkflowRef<int, int> stall_one{"stall_one"};
  RunningEngine a(
      [](EngineOptions& o) {
        o.instance = "stats-a";
        o.activity_max_concurrency = 2;
        o.app_version = "7.1";
      },
      [&](Engine& e) {
        e.add_workflow(stall_one, [](WorkflowContext& ctx, const int& ms) { return ctx.call<StallActivity>(ms); });
      });
  a.engine.start_workflow<HelloWorkflow>("done-1", "x").result(10s);
  a.engine.start_workflow<FailingWorkflow>("failed-1", "on purpose");
  CHECK(wait_until([&] { return a.engine.runs().latest("failed-1").status == WorkflowStatus::failed; }));
  // Two stalls hold both slots (leased to engine a); a third waits for a slot, ready in the table, or
  // leased already when the engine ran it at once as its workflow scheduled it (it then waits for
  // a slot in the engine: leased tasks reach twice the slots).
  for (const char* id : {"stall-1", "stall-2", "stall-3"}) {
    a.engine.start_workflow(stall_one, id, 60'000);
  }
  CHECK(wait_until([&] {
    const Stats s = a.engine.runs().stats();
    for (const auto& q : s.activity_queues) {
      if (q.activity == "stall") return q.running >= 2 && q.running + q.ready == 3;
    }
    return false;
  }));
  const Stats s = a.engine.runs().stats();
  CHECK(s.runs_by_status.at(WorkflowStatus::completed) == 1);
  CHECK(s.runs_by_status.at(WorkflowStatus::failed) == 1);
  CHECK(s.runs_by_status.at(WorkflowStatus::running) == 3);
  CHECK(s.blocked == 0);
  REQUIRE(s.oldest_running);
  CHECK(s.oldest_running->workflow_id == "stall-1");
  std::int64_t leased = 0;
  for (const auto& q : s.activity_queues) {
    if (q.activity == "stall") leased = q.running;
  }
  REQUIRE(s.instances.size() == 1);
  const InstanceStats& i = s.instances[0];
  CHECK(i.instance == "stats-a");
  CHECK(i.owner.rfind("stats-a@", 0) == 0);
  CHECK(i.app_version == "7.1");
  CHECK(i.activity_capacity == 2);
  CHECK(i.workflow_capacity == a.db.options().workflow_max_concurrency);
  CHECK(i.activities_leased == leased);
  REQUIRE(i.saturation);
  CHECK(*i.saturation == Approx(static_cast<double>(leased) / 2));
  CHECK(i.alive);

  // An engine that stops takes its row away; its leases go with its stop.
  a.engine.stop();
  const Stats after = Engine(a.db.options()).runs().stats();
  CHECK(after.instances.empty());
}
