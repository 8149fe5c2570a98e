// Failover (docs/operations.md, Failover): a primary and its streaming standby, started by the
// test kit (TemporaryPostgres::Options::standby_of), and engines on a URL that names both with
// target_session_attrs=read-write. A URL that reaches no writable host fails at start; a server
// that stops taking writes under running engines is reconnected to, never a failed write; an
// engine goes on on a promoted standby. tests/fault/failover_pgtest.cpp runs the 1,000-run size.
#include <catch2/catch.hpp>

#include <future>

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

}  // namespace

TEST_CASE("a URL that reaches no writable host fails at the engine's start, saying what to change", "[failover]") {
  TemporaryPostgres primary;
  const TemporaryPostgres standby({.standby_of = &primary});
  const std::string schema = testing::unique_schema("fo");

  {  // straight to a standby: the engine refuses it as its database
    Engine engine(failover_options(standby.url(), schema));
    register_all(engine);
    expect_throw<InvalidOptions>([&] { engine.start(); }, "EngineOptions::database_url reaches a standby",
                                 "target_session_attrs=read-write", "docs/operations.md, Failover");
  }
  {  // an engine that does not migrate: its start fails the same, and it may read the standby
    migrate_schema(primary.url(), schema);
    REQUIRE(wait_until([&] {
      return count_on(standby.url(), "SELECT count(*) FROM pg_namespace WHERE nspname = '" + schema + "'") == 1;
    }));
    EngineOptions o = failover_options(standby.url(), schema);
    o.migrate_schema = false;
    Engine engine(o);
    register_all(engine);
    CHECK(engine.schedules().list().empty());
    expect_throw<InvalidOptions>([&] { engine.start(); }, "EngineOptions::database_url reaches a standby");
  }
  {  // every host a standby: libpq finds none that takes writes
    Engine engine(failover_options(multi_host_url({standby.url()}), schema));
    register_all(engine);
    expect_throw<DatabaseRefused>([&] { engine.start(); }, "session is read-only", "no host in the URL takes writes",
                                  "list the primary among its hosts");
  }
  {  // the standby listed first, then the primary: libpq passes over the standby
    Engine engine(failover_options(multi_host_url({standby.url(), primary.url()}), schema));
    register_all(engine);
    engine.start();
    CHECK(engine.start_workflow<HelloWorkflow>("through", std::string("primary")).result(30s) == "hello, primary");
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

  admin(server.url(), "ALTER SYSTEM SET default_transaction_read_only = on");
  admin(server.url(), "SELECT pg_reload_conf()");
  std::this_thread::sleep_for(300ms);  // each session reads the new default at its next statement
  auto during = std::async(
      std::launch::async, [&] { return engine.start_workflow<HelloWorkflow>("during", std::string("b")).result(60s); });
  // Still trying two seconds on: refused writes were not the start's failure.
  CHECK(during.wait_for(2s) == std::future_status::timeout);
  // ALTER SYSTEM runs outside a transaction: one statement per call. Not read-only: with a session
  // setting of its own (the "options" of its conninfo).
  const std::string writable = server.url() + " options='-c default_transaction_read_only=off'";
  admin(writable, "ALTER SYSTEM RESET default_transaction_read_only");
  admin(writable, "SELECT pg_reload_conf()");
  CHECK(during.get() == "hello, b");
  const std::string runs = "SELECT count(*) FROM \"" + schema + "\".workflows";
  CHECK(count_on(server.url(), runs + " WHERE status = 'completed'") == 2);
  CHECK(count_on(server.url(), runs + " WHERE status <> 'completed'") == 0);
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
