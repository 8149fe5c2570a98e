// Per-test database access: a fresh schema on the test cluster, dropped at the end.
#pragma once

#include <chrono>
#include <durable/durable.hpp>
#include <durable/testing.hpp>
#include <functional>
#include <pqxx/pqxx>
#include <string>
#include <thread>
#include <vector>

namespace durable::test {

class TestDb {
 public:
  TestDb();
  ~TestDb();
  TestDb(const TestDb&) = delete;
  TestDb& operator=(const TestDb&) = delete;

  // The cluster's superuser: for the test's own reads and writes of the schema.
  const std::string& url() const { return url_; }
  const std::string& schema() const { return schema_; }

  // Options for an engine on this test's schema, polling fast so tests stay quick. With
  // DURABLE_TEST_ROLES=engine in the environment, the schema is migrated by an owner role at
  // once and the engine connects as a role granted only what `durable migrate --engine-role`
  // grants (docs/operations.md, Roles and privileges). With DURABLE_TEST_POOLER=1, through a
  // PgBouncer in transaction mode (through_test_pooler).
  EngineOptions options() const;

  // One value from a query against this schema; `{s}` in the SQL is the quoted schema name.
  long long count(const std::string& sql) const;
  pqxx::result query(const std::string& sql) const;
  bool schema_exists() const;

 private:
  std::string url_;
  std::string schema_;
  std::string engine_url_;  // url_, or as the engine role
};

// `url` connecting as `role` instead (a libpq URI or key=value conninfo).
std::string as_role(const std::string& url, const std::string& role);

// Whether the tests' engines run under the engine role (DURABLE_TEST_ROLES=engine).
bool under_engine_role();

// With DURABLE_TEST_POOLER=1 in the environment: the URL of a PgBouncer in transaction mode in
// front of the test database (testing::database_url()), started once per process, which its
// child processes inherit as DURABLE_TEST_POOLER_URL. Empty without.
const std::string& test_pooler_url();

// Behind a pooler the engine cannot turn JIT off per session: the test cluster's roles (its
// superuser and the engine, owner and reader roles) get `jit = off` as their default, once.
void test_roles_without_jit();

// With a test pooler: `o` connects through it as the same user (EngineOptions::pooler_mode), and
// LISTENs on its direct URL (EngineOptions::listen_url). Without one, `o` is left as it is.
void through_test_pooler(EngineOptions& o);

// One URL for the test kit's servers at `urls` ("host=... port=... dbname=postgres user=durable"
// each): libpq tries their hosts in turn and keeps the one that takes writes
// (target_session_attrs=read-write), as engines connect to a primary and its standbys.
std::string multi_host_url(const std::vector<std::string>& urls);

// How many runs workflow id `workflow_id` has had (those with `status`, when one is given).
long long runs_of(const TestDb& db, const std::string& workflow_id, const std::string& status = "");

// How many journal events of `kind` ("timer_started", ...) the runs of `workflow_id` wrote.
long long events_of(const TestDb& db, const std::string& workflow_id, const std::string& kind);

// A started engine with every test definition registered, on a fresh schema.
// Use as a Catch2 fixture (TEST_CASE_METHOD) or construct one with adjusted options and more
// definitions (`register_more`, called before start(): registering after it throws).
struct RunningEngine {
  explicit RunningEngine(const std::function<void(EngineOptions&)>& adjust = {},
                         const std::function<void(Engine&)>& register_more = {});
  TestDb db;
  Engine engine;
};

// Polls `condition` until it holds or `limit` passes; returns whether it held.
template <typename F>
bool wait_until(F condition, std::chrono::milliseconds limit = std::chrono::seconds{10}) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds{10});
  }
  return true;
}

// The engine's metrics once its activity slots are empty and `finished_runs` runs are counted.
// Counters move just after the commits they count, so a run's result can be visible first.
EngineMetrics settled_metrics(Engine& engine, std::uint64_t finished_runs);

}  // namespace durable::test
