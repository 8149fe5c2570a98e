#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "base/failpoint.hpp"
#include "pg/connection_pool.hpp"
#include "pg/migrations.hpp"
#include "pg/store.hpp"
#include "support/test_db.hpp"
#include "support/test_workflows.hpp"

using namespace durable;
using namespace durable::test;

namespace {

EngineOptions options_for(const std::string& url, const std::string& schema) {
  EngineOptions o;
  o.database_url = url;
  o.schema = schema;
  o.poll_interval = std::chrono::milliseconds{200};
  return o;
}

// Every workflow completed and every step committed exactly once.
void check_exactly_once(const std::string& url, const std::string& schema, int workflows) {
  pqxx::connection conn(url);
  pqxx::nontransaction tx(conn);
  const std::string s = "\"" + schema + "\"";
  CHECK(tx.exec1("SELECT count(*) FROM " + s + ".workflows WHERE status = 'completed'")[0].as<int>() == workflows);
  CHECK(tx.exec1("SELECT count(*) FROM " + s + ".journal_events WHERE kind = 'activity_completed'")[0].as<int>() ==
        workflows * 5);
  CHECK(tx.exec1("SELECT coalesce(max(n), 0) FROM (SELECT count(*) AS n FROM " + s +
                 ".journal_events WHERE kind = 'activity_completed' GROUP BY run_id, step) x")[0]
            .as<int>() == 1);
}

}  // namespace

TEST_CASE("workflows in flight survive a PostgreSQL restart with every step committed once", "[pg][faults][restart]") {
  testing::TemporaryPostgres server;  // our own cluster: this test stops it
  const std::string schema = testing::unique_schema();
  Engine engine(options_for(server.url(), schema));
  register_all(engine);
  engine.start();
  std::vector<WorkflowHandle<int>> runs;
  for (int i = 0; i < 40; ++i) runs.push_back(engine.start_workflow<ChainWorkflow>("restart-" + std::to_string(i), i));
  std::this_thread::sleep_for(std::chrono::milliseconds{150});
  server.restart();
  for (int i = 0; i < 40; ++i) CHECK(runs[static_cast<std::size_t>(i)].result(std::chrono::seconds{120}) == i + 5);
  check_exactly_once(server.url(), schema, 40);
}

TEST_CASE_METHOD(RunningEngine, "workflows in flight survive their connections being killed",
                 "[pg][faults][connections]") {
  std::vector<WorkflowHandle<int>> runs;
  for (int i = 0; i < 40; ++i) runs.push_back(engine.start_workflow<ChainWorkflow>("cut-" + std::to_string(i), i));
  long long terminated = 0;
  for (int round = 0; round < 3; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds{100});
    // Every session of the engine, its pool and listener included (named durable/<schema>/<instance>);
    // not those of other tests running beside this one.
    terminated += db.count(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name "
        "LIKE 'durable/" +
        db.schema() + "/%'");
  }
  CHECK(terminated > 0);
  for (int i = 0; i < 40; ++i) CHECK(runs[static_cast<std::size_t>(i)].result(std::chrono::seconds{120}) == i + 5);
  check_exactly_once(db.url(), db.schema(), 40);
}

TEST_CASE("lease tokens handed out before a PostgreSQL crash are never handed out again",
          "[pg][faults][restart][fencing]") {
  testing::TemporaryPostgres server;  // our own cluster: this test crashes it
  const std::string schema = testing::unique_schema();
  const std::string names = R"(["fenced"])";
  constexpr int tasks = 200;
  auto claim_all = [&](const std::string& owner) {
    // A pool and store of their own: another engine process, with no tokens in memory.
    pg::ConnectionPool pool(server.url(), schema, 2, "fencing-test");
    pool.write("migrate", [&](pqxx::connection& conn, bool) { pg::migrate(conn, schema); });
    pg::Store store(pool);
    std::vector<std::int64_t> tokens;
    for (const auto& task : store.claim_tasks(names, R"(["default"])", tasks, owner, std::chrono::seconds{30})) {
      tokens.push_back(task.lease_token);
    }
    return tokens;
  };
  {
    pg::ConnectionPool pool(server.url(), schema, 1, "fencing-test");
    pool.write("insert_tasks", [&](pqxx::connection& conn, bool) {
      pg::migrate(conn, schema);
      pqxx::nontransaction tx(conn);
      tx.exec_params("INSERT INTO " + pg::quoted(schema) +
                         ".tasks (run_id, workflow_id, step, name, input, options, status, available_at, attempt) "
                         "SELECT gen_random_uuid(), 'w', g, 'fenced', 'null', $1::jsonb, 'pending', now(), 0 "
                         "FROM generate_series(1, $2) g",
                     pg::options_to_json(detail::ResolvedActivityOptions{}).dump(), tasks);
    });
  }
  // Claims commit asynchronously: a crash right after one may lose it while its worker runs on.
  const auto before = claim_all("before-crash");
  REQUIRE(before.size() == static_cast<std::size_t>(tasks));
  server.stop(testing::TemporaryPostgres::StopMode::immediate);
  server.start();
  {
    pqxx::connection conn(server.url());
    pqxx::nontransaction(conn).exec("UPDATE " + pg::quoted(schema) +
                                    ".tasks SET status = 'pending', available_at = now() - interval '1 s', "
                                    "lease_token = NULL, lease_until = NULL");
  }
  const auto after = claim_all("after-crash");
  REQUIRE(after.size() == static_cast<std::size_t>(tasks));
  // Every token of the second claim is new: no two workers can hold one lease.
  CHECK(*std::min_element(after.begin(), after.end()) > *std::max_element(before.begin(), before.end()));
  std::set<std::int64_t> distinct(after.begin(), after.end());
  CHECK(distinct.size() == after.size());
}

TEST_CASE("a start whose answer was lost finds its own run and replays it at once", "[pg][faults][start]") {
  // The insert commits, leasing the new run to this engine, and its answer is dropped: the retry
  // must find its own run and lease, or the run would wait out the lease before anyone claims it.
  detail::configure_failpoints("lost_answer.start_workflow=fail@1");
  struct Reset {
    ~Reset() { detail::configure_failpoints(""); }
  } reset;
  RunningEngine env([](EngineOptions& o) { o.workflow_lease = std::chrono::seconds{60}; });
  const auto started = std::chrono::steady_clock::now();
  auto run = env.engine.start_workflow<HelloWorkflow>("lost-start", "again");
  CHECK(run.result(90s) == "hello, again");
  const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
  INFO("the result came " << waited.count() << " ms after the start");
  CHECK(waited < 10s);
  CHECK(env.db.count("SELECT count(*) FROM {s}.workflows WHERE workflow_id = 'lost-start'") == 1);
}

TEST_CASE("a completion whose answer was lost is found in the journal: counted once, and its next step runs at once",
          "[pg][faults][complete]") {
  // The statement that journals step 1's outcome (and deletes its task row) commits with the next
  // step's task leased at once to this engine, and its answer is dropped. The retry must find the
  // outcome in the journal, so the completion counts, and take back the task leased at once, or
  // that task would wait out its 30 s lease before any engine claimed it.
  detail::configure_failpoints("lost_answer.complete_steps=fail@1");
  struct Reset {
    ~Reset() { detail::configure_failpoints(""); }
  } reset;
  RunningEngine env;
  const auto started = std::chrono::steady_clock::now();
  auto run = env.engine.start_workflow<ChainWorkflow>("lost-completion", 1);
  CHECK(run.result(90s) == 6);
  CHECK(std::chrono::steady_clock::now() - started < 10s);
  CHECK(wait_until([&] { return env.engine.metrics().completions == 5; }));
  CHECK(env.db.count("SELECT count(*) FROM {journal} j WHERE workflow_id = 'lost-completion' AND "
                     "kind = 'activity_completed'") == 5);
  CHECK(env.db.count("SELECT count(*) FROM {s}.tasks") == 0);
}
