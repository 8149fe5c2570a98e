// Failover (docs/operations.md, Failover): a primary and its streaming standby, started by the
// test kit (TemporaryPostgres::Options::standby_of), and engines on a URL that names both with
// target_session_attrs=read-write. A URL that reaches no writable host fails at start; a server
// that stops taking writes under running engines is reconnected to, never a failed write; an
// engine goes on on a promoted standby. tests/fault/failover_pgtest.cpp runs the 1,000-run size.
#include <catch2/catch.hpp>

#include <future>

#include <durable/pqxx.hpp>

#include "base/failpoint.hpp"
#include "support/expect.hpp"
#include "support/test_db.hpp"
#include "support/test_workflows.hpp"

using namespace durable;
using namespace durable::test;
using namespace std::chrono_literals;
using durable::testing::TemporaryPostgres;

namespace {

EngineOptions failover_options(const std::string& url, const std::string& schema) {
  EngineOptions o;
  o.database_url = url;
  o.schema = schema;
  o.poll_interval = 200ms;
  o.shutdown_grace = 2s;
  return o;
}

void admin(const std::string& url, const std::string& sql) {
  pqxx::connection conn(url);
  pqxx::nontransaction(conn).exec(sql);
}

long long count_on(const std::string& url, const std::string& sql) {
  pqxx::connection conn(url);
  return pqxx::nontransaction(conn).exec1(sql)[0].as<long long>();
}

// Every session of `server` read-only by default (as a failed-over primary behind its old name
// refuses writes, or a host that turns a full disk's database read-only), or not any more.
void set_read_only(const TemporaryPostgres& server, bool on) {
  // ALTER SYSTEM runs outside a transaction: one statement per call; not read-only itself.
  const std::string writable = server.url() + " options='-c default_transaction_read_only=off'";
  admin(writable, on ? "ALTER SYSTEM SET default_transaction_read_only = on"
                     : "ALTER SYSTEM RESET default_transaction_read_only");
  admin(writable, "SELECT pg_reload_conf()");
  std::this_thread::sleep_for(300ms);  // each session reads the new default at its next statement
}

}  // namespace

TEST_CASE("an engine whose URL reaches no writable host waits for one, then fails its start saying what to change",
          "[failover]") {
  TemporaryPostgres primary;
  const TemporaryPostgres standby({.standby_of = &primary});
  const std::string schema = testing::unique_schema("fo");
  // A start during a failover waits unavailable_after for a writable server, as for one down.
  auto start_on = [&](const std::string& url, bool migrate) {
    EngineOptions o = failover_options(url, schema);
    o.migrate_schema = migrate;
    o.database_unavailable_after = 1s;
    auto engine = std::make_unique<Engine>(o);
    register_all(*engine);
    return engine;
  };
  {  // straight to a standby
    auto engine = start_on(standby.url(), true);
    expect_throw<DatabaseUnavailable>([&] { engine->start(); }, "the server takes no writes (a standby, or read-only)",
                                      "target_session_attrs=read-write", "docs/operations.md, Failover");
  }
  {  // an engine that does not migrate: its start fails the same, and it may read the standby
    migrate_schema(primary.url(), schema);
    REQUIRE(wait_until([&] {
      return count_on(standby.url(), "SELECT count(*) FROM pg_namespace WHERE nspname = '" + schema + "'") == 1;
    }));
    auto engine = start_on(standby.url(), false);
    CHECK(engine->schedules().list().empty());
    expect_throw<DatabaseUnavailable>([&] { engine->start(); }, "the server takes no writes");
  }
  {  // every host a standby: libpq finds none that takes writes
    auto engine = start_on(multi_host_url({standby.url()}), true);
    expect_throw<DatabaseUnavailable>([&] { engine->start(); }, "session is read-only",
                                      "target_session_attrs=read-write");
  }
  {  // the standby listed first, then the primary: libpq passes over the standby
    auto engine = start_on(multi_host_url({standby.url(), primary.url()}), true);
    engine->start();
    CHECK(engine->start_workflow<HelloWorkflow>("through", std::string("primary")).result(30s) == "hello, primary");
  }
}

TEST_CASE("a server that stops taking writes under a running engine: writes retry on new sessions, nothing fails",
          "[failover]") {
  // As a failed-over primary that answers reads and refuses writes (25006), or a host that turns
  // a full disk's database read-only: here default_transaction_read_only, for every session.
  TemporaryPostgres server;
  const std::string schema = testing::unique_schema("fo");
  Engine engine(failover_options(server.url(), schema));
  register_all(engine);
  engine.start();
  CHECK(engine.start_workflow<HelloWorkflow>("before", std::string("a")).result(30s) == "hello, a");

  set_read_only(server, true);
  auto during = std::async(
      std::launch::async, [&] { return engine.start_workflow<HelloWorkflow>("during", std::string("b")).result(60s); });
  // Still trying two seconds on: refused writes were not the start's failure.
  CHECK(during.wait_for(2s) == std::future_status::timeout);
  set_read_only(server, false);
  CHECK(during.get() == "hello, b");
  const std::string runs = "SELECT count(*) FROM \"" + schema + "\".workflows";
  CHECK(count_on(server.url(), runs + " WHERE status = 'completed'") == 2);
  CHECK(count_on(server.url(), runs + " WHERE status <> 'completed'") == 0);
}

namespace {
struct ReadOnlyInsert {  // a transactional activity of one attempt: a failure would fail its run
  static constexpr auto name = "read_only_insert";
  static ActivityOptions options() { return {.retry = RetryPolicy{.max_attempts = 1}}; }
  int operator()(TransactionContext& ctx, const int& n) const {
    ctx.transaction().exec_params0("INSERT INTO public.failover_rows (n) VALUES ($1)", n);
    return n;
  }
};
struct FailpointsCleared {
  FailpointsCleared() = default;
  FailpointsCleared(const FailpointsCleared&) = delete;
  FailpointsCleared& operator=(const FailpointsCleared&) = delete;
  ~FailpointsCleared() { detail::configure_failpoints(""); }
};
struct ReadOnlyInsertFlow {
  static constexpr auto name = "read_only_insert_flow";
  int operator()(WorkflowContext& ctx, const int& n) { return ctx.call<ReadOnlyInsert>(n); }
};
}  // namespace

TEST_CASE("a transactional activity whose transaction would begin while the server takes no writes waits for it",
          "[failover][transactions]") {
  TemporaryPostgres server;
  admin(server.url(), "CREATE TABLE public.failover_rows (n int)");
  // Each task claimed, then held a moment before its transaction begins. Set before the engine
  // starts and cleared after it stopped: its threads read failpoints.
  const FailpointsCleared cleared;
  detail::configure_failpoints("task.after_claim=sleep:1000");
  Engine engine(failover_options(server.url(), testing::unique_schema("fo")));
  engine.add<ReadOnlyInsert>().add<ReadOnlyInsertFlow>();
  engine.start();
  CHECK(engine.start_workflow<ReadOnlyInsertFlow>("before", 1).result(30s) == 1);
  auto during = engine.start_workflow<ReadOnlyInsertFlow>("during", 2);
  std::this_thread::sleep_for(300ms);
  set_read_only(server, true);  // by the time its transaction would begin
  std::this_thread::sleep_for(2s);
  set_read_only(server, false);
  CHECK(during.result(30s) == 2);  // its one attempt was not spent on a server that took no writes
  CHECK(count_on(server.url(), "SELECT count(*) FROM public.failover_rows") == 2);
}

TEST_CASE("an engine goes on on a promoted standby after its primary stops hard, its runs and results intact",
          "[failover]") {
  TemporaryPostgres primary({.synchronous_standby_names = "*"});  // each commit on both
  TemporaryPostgres standby({.standby_of = &primary});
  const std::string schema = testing::unique_schema("fo");
  Engine engine(failover_options(multi_host_url({primary.url(), standby.url()}), schema));
  register_all(engine);
  engine.start();
  CHECK(engine.start_workflow<HelloWorkflow>("before", std::string("a")).result(30s) == "hello, a");
  auto across = engine.start_workflow<SleepWorkflow>("across", 3000);  // its timer runs out after the failover

  primary.stop(TemporaryPostgres::StopMode::immediate);
  standby.promote();
  CHECK(across.result(60s)["slept_ms"] >= 3000);
  CHECK(engine.workflow<HelloWorkflow>("before").result(5s) == "hello, a");  // committed before: still there
  CHECK(engine.start_workflow<HelloWorkflow>("after", std::string("b")).result(30s) == "hello, b");
  CHECK(count_on(standby.url(), "SELECT count(*) FROM \"" + schema + "\".workflows WHERE status = 'completed'") == 3);
}
