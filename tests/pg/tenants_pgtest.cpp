// Many tenants on one server (docs/operations.md): a schema per tenant, each with its own three
// roles (TestRoles). No role of one tenant can read, write or hold up another's: every privilege is
// per schema, and every lock an engine or a migration waits for is in its own schema (migration
// 24), where a stranger cannot take it. Advisory locks, which any role of the database can take,
// are only tried, or waited for a bounded time when a schema is created.
#include <catch2/catch.hpp>
#include <pqxx/pqxx>

#include <future>

#include "pg/migrations.hpp"
#include "support/test_db.hpp"
#include "support/test_roles.hpp"
#include "support/test_workflows.hpp"

using namespace durable;
using namespace durable::test;
using namespace std::chrono_literals;

namespace {

// A session of another tenant's role holding, for as long as it lives, every advisory lock key
// `schema`'s engines and migrations took before migration 24: the migration's, retention's, queue
// `queue`'s admission lock and the 1,024 buckets of the schema's queue lines (queue_line_bucket).
class StrangerLocks {
 public:
  StrangerLocks(const std::string& url, const std::string& schema, const std::string& queue) : conn_(url) {
    pqxx::nontransaction tx(conn_);
    tx.exec_params(
        "SELECT pg_advisory_lock(hashtextextended('durable.migrate:' || $1, 0)), "
        "pg_advisory_lock(hashtextextended('durable.retention:' || $1, 0)), "
        "pg_advisory_lock(hashtext('durable queues'), hashtext('\"' || $1 || '\".' || $2)), "
        "(SELECT count(pg_advisory_lock(hashtextextended('durable.queue_lines:\"' || $1 || '\"', 0) # b)) "
        " FROM generate_series(0, 1023) b)",
        schema, queue);
    held =
        tx.exec("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()")[0][0].as<int>();
  }
  void release() {
    pqxx::nontransaction tx(conn_);
    tx.exec("SELECT pg_advisory_unlock_all()");
  }
  int held = 0;

 private:
  pqxx::connection conn_;
};

// Runs `work` and says whether it ended within `limit`; if not, the stranger lets go (so that the
// test fails rather than hangs) before `work`'s outcome is taken.
template <typename Work>
bool ends_within(std::chrono::seconds limit, StrangerLocks& stranger, Work work) {
  auto job = std::async(std::launch::async, work);
  const bool in_time = job.wait_for(limit) == std::future_status::ready;
  if (!in_time) stranger.release();
  job.get();
  return in_time;
}

}  // namespace

TEST_CASE("no role of one tenant may read or write another tenant's schema", "[tenants]") {
  TestDb a_db;
  TestDb b_db;
  TestRoles a(a_db);
  TestRoles b(b_db);
  a.migrate_and_grant();
  b.migrate_and_grant();
  // The same workflow id in both: each tenant's run is its own.
  for (const TestRoles* tenant : {&a, &b}) {
    Engine engine(tenant->options_of(tenant->engine));
    register_all(engine);
    engine.start();
    CHECK(engine.start_workflow<HelloWorkflow>("same-id", tenant->db.schema()).result(20s) ==
          "hello, " + tenant->db.schema());
  }
  for (const std::string& role : {a.owner, a.engine, a.reader}) {
    INFO("tenant A's role " << role);
    const std::string url = a.url_of(role);
    for (const char* sql :
         {"SELECT * FROM {s}.workflows", "SELECT * FROM {s}.journal", "INSERT INTO {s}.locks (name) VALUES ('mine')",
          "UPDATE {s}.queues SET concurrency = 1", "DELETE FROM {s}.journal",
          "SELECT {s}.queue_line_bucket('q', 'k', 0)", "SELECT * FROM {s}.locks FOR UPDATE",
          "BEGIN; LOCK TABLE {s}.schema_version IN SHARE ROW EXCLUSIVE MODE; COMMIT",
          "BEGIN; LOCK TABLE {s}.queues IN ACCESS EXCLUSIVE MODE; COMMIT"}) {
      INFO(sql);
      CHECK(sqlstate_of(url, b_db.schema(), sql) == "42501");
    }
    // An engine of tenant A's role pointed at B's schema is refused at its start.
    EngineOptions stray = a.options_of(role);
    stray.schema = b_db.schema();
    Engine engine(stray);
    register_all(engine);
    CHECK_THROWS_AS(engine.start(), DatabaseRefused);
  }
  CHECK(b_db.count("SELECT count(*) FROM {s}.workflows") == 1);
}

TEST_CASE("a stranger holding every advisory lock a tenant's engines once took holds none of them up",
          "[tenants][queues]") {
  TestDb a_db;
  TestDb b_db;
  TestRoles a(a_db);
  TestRoles b(b_db);
  a.migrate_and_grant();
  b.migrate_and_grant(pg::latest_schema_version() - 1);  // B is upgraded while the stranger holds them
  StrangerLocks stranger(a.url_of(a.engine), b_db.schema(), "b-queue");
  REQUIRE(stranger.held == 1'027);

  CHECK(ends_within(20s, stranger, [&] { migrate_schema(b.url_of(b.owner), b_db.schema()); }));
  CHECK(ends_within(20s, stranger, [&] {
    grant_schema_roles(b.url_of(b.owner), b_db.schema(), {{b.engine}, {b.reader}});
  }));
  Engine engine(b.options_of(b.engine));
  register_all(engine);
  engine.add_queue({"b-queue", 2, 1});
  CHECK(ends_within(20s, stranger, [&] { engine.start(); }));
  // Runs join their lines (a bucket held: each locks its line's row) and are admitted (the queue's
  // row locked) in turn.
  std::vector<WorkflowHandle<int>> runs;
  for (int i = 0; i < 12; ++i) {
    StartOptions queued;
    queued.queue = "b-queue";
    queued.concurrency_key = "key-" + std::to_string(i % 4);
    runs.push_back(engine.start_workflow<SlowWorkflow>("queued-" + std::to_string(i), 5, queued));
  }
  for (auto& run : runs) CHECK(run.result(30s) == 5);
  // A prune (the row 'retention', granted to the engine role through the upgrade) deletes them.
  std::int64_t pruned = 0;
  CHECK(ends_within(20s, stranger, [&] {
    pruned = engine.runs().prune(std::chrono::system_clock::now() + 1h, {"ops", "retention"}).runs;
  }));
  CHECK(pruned == 12);
  CHECK(b_db.count("SELECT count(*) FROM {s}.workflows") == 0);
}

TEST_CASE("a schema's creation waits for a stranger holding its lock only so long, and names the holder", "[tenants]") {
  TestDb a_db;
  TestDb c_db;
  TestRoles a(a_db);
  TestRoles c(c_db);
  StrangerLocks stranger(a.url_of(a.engine), c_db.schema(), "none");
  const auto pid = a_db.query("SELECT pid FROM pg_stat_activity WHERE usename = '" + a.engine + "'");
  REQUIRE(pid.size() == 1);
  const auto began = std::chrono::steady_clock::now();
  try {
    migrate_schema(c.url_of(c.owner), c_db.schema());
    FAIL("the schema was created while its lock was held");
  } catch (const DatabaseRefused& e) {
    CHECK(e.sqlstate() == "55P03");
    CHECK_THAT(e.what(), Catch::Contains(fmt::format("pid {} (role '{}'", pid[0][0].c_str(), a.engine)) &&
                             Catch::Contains("pg_terminate_backend"));
  }
  CHECK(std::chrono::steady_clock::now() - began < 15s);
  CHECK_FALSE(c_db.schema_exists());
  stranger.release();
  CHECK(migrate_schema(c.url_of(c.owner), c_db.schema()) == pg::latest_schema_version());
}
