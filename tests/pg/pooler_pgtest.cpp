// Behind PgBouncer in transaction mode (docs/operations.md): with EngineOptions::pooler_mode,
// engines keep no session state (statements unprepared, no session SET, LISTEN only on a direct
// listen_url), so a server connection other clients get next carries nothing of theirs; an
// engine that finds a pooler it was not told of, or a listen URL through one, refuses to start.
#include <catch2/catch.hpp>
#include <pqxx/pqxx>

#include "support/expect.hpp"
#include "support/test_db.hpp"
#include "support/test_workflows.hpp"

using namespace durable;
using namespace durable::test;
using namespace std::chrono_literals;

namespace {

// Two server connections for every client: each transaction of an engine may run on either.
testing::TemporaryPgBouncer::Options tight() {
  testing::TemporaryPgBouncer::Options options;
  options.server_connections = 2;
  return options;
}

EngineOptions through(const std::string& pooler_url, const TestDb& db) {
  test_roles_without_jit();
  EngineOptions o = db.options();
  o.database_url = pooler_url;
  o.listen_url.clear();
  o.pooler_mode = true;
  return o;
}

// What every server connection behind the pooler carries: two clients in open transactions hold
// both of them, each answering for its own.
std::vector<std::string> server_sessions(const std::string& pooler_url) {
  pqxx::connection a(pooler_url);
  pqxx::connection b(pooler_url);
  pqxx::work ta(a);
  pqxx::work tb(b);
  std::vector<std::string> seen;
  for (pqxx::work* tx : {&ta, &tb}) {
    const auto row = tx->exec1(
        "SELECT pg_backend_pid() AS pid, current_setting('plan_cache_mode') AS plans, "
        "current_setting('enable_seqscan') AS seqscan, current_setting('default_transaction_read_only') AS ro, "
        "(SELECT count(*) FROM pg_prepared_statements) AS prepared, "
        "(SELECT count(*) FROM pg_listening_channels()) AS listening, "
        "(SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()) AS advisory");
    seen.push_back(fmt::format("plans={} seqscan={} read_only={} prepared={} listening={} advisory={}",
                               row["plans"].c_str(), row["seqscan"].c_str(), row["ro"].c_str(),
                               row["prepared"].as<int>(), row["listening"].as<int>(), row["advisory"].as<int>()));
    CHECK(row["pid"].as<int>() != tx->conn().backendpid());  // through the pooler indeed
  }
  return seen;
}

// What `act` refused with: InvalidOptions' message, or a line saying it was not refused so.
std::string refusal(const std::function<void()>& act) {
  try {
    act();
  } catch (const InvalidOptions& e) {
    return e.what();
  }
  return "(not refused with InvalidOptions)";
}

}  // namespace

TEST_CASE("through PgBouncer in transaction mode, engines in pooler mode run workflows and leave no session state",
          "[pooler]") {
  TestDb db;
  testing::TemporaryPgBouncer pooler(db.url(), tight());
  // One engine LISTENs on a direct URL, the other only polls: each runs what the other starts.
  EngineOptions listening = through(pooler.url(), db);
  listening.listen_url = db.url();
  listening.instance = "listening";
  EngineOptions polling = through(pooler.url(), db);
  polling.instance = "polling";
  Engine a(listening);
  Engine b(polling);
  for (Engine* e : {&a, &b}) {
    register_all(*e);
    e->start();
  }
  std::vector<WorkflowHandle<int>> chains;
  for (int i = 0; i < 20; ++i)
    chains.push_back((i % 2 ? a : b).start_workflow<ChainWorkflow>(fmt::format("chain-{}", i), i));
  auto inbox = b.start_workflow<InboxWorkflow>("inbox", InboxInput{2, 0});
  auto sleeper = a.start_workflow<SleepWorkflow>("sleeper", 50);
  a.send("inbox", "item", std::string("one"));
  b.send("inbox", "item", std::string("two"));
  for (int i = 0; i < 20; ++i) CHECK(chains[static_cast<std::size_t>(i)].result(60s) == i + 5);
  CHECK(inbox.result(60s) == std::vector<std::string>{"one", "two"});
  CHECK(sleeper.result(60s)["slept_ms"] >= 50);
  for (const auto& session : server_sessions(pooler.url())) {
    CHECK(session == "plans=auto seqscan=on read_only=off prepared=0 listening=0 advisory=0");
  }
}

TEST_CASE("behind the pooler, the LISTEN session on listen_url wakes the engine: no step waits for a poll",
          "[pooler][wake]") {
  TestDb db;
  testing::TemporaryPgBouncer pooler(db.url());
  EngineOptions o = through(pooler.url(), db);
  o.listen_url = db.url();
  o.poll_interval = 30s;  // each of the five steps would wait for one without the wake-ups
  Engine engine(o);
  register_all(engine);
  engine.start();
  const auto start = std::chrono::steady_clock::now();
  CHECK(engine.start_workflow<ChainWorkflow>("woken", 1).result(20s) == 6);
  CHECK(std::chrono::steady_clock::now() - start < 10s);
}

TEST_CASE("an engine that finds itself behind a pooler without pooler_mode refuses to start and writes nothing",
          "[pooler][bad_input]") {
  TestDb db;
  testing::TemporaryPgBouncer pooler(db.url());
  EngineOptions o = through(pooler.url(), db);
  o.pooler_mode = false;
  Engine engine(o);
  register_all(engine);
  const std::string refused = refusal([&] { engine.start(); });
  CHECK_THAT(refused, Catch::Matchers::Contains("through a connection pooler") &&
                          Catch::Matchers::Contains("set EngineOptions::pooler_mode = true"));
  CHECK_FALSE(db.schema_exists());  // refused before migrating
}

TEST_CASE("a listen URL that leads through the pooler too, or one without pooler_mode, is refused at start",
          "[pooler][bad_input]") {
  TestDb db;
  testing::TemporaryPgBouncer pooler(db.url());
  EngineOptions o = through(pooler.url(), db);
  o.listen_url = pooler.url();
  Engine engine(o);
  register_all(engine);
  CHECK_THAT(refusal([&] { engine.start(); }),
             Catch::Matchers::Contains("EngineOptions::listen_url reaches PostgreSQL through a connection pooler too"));
  CHECK_FALSE(db.schema_exists());

  EngineOptions direct = db.options();
  direct.pooler_mode = false;
  direct.listen_url = db.url();
  CHECK_THAT(refusal([&] { Engine refused_engine(direct); }),
             Catch::Matchers::Contains("listen_url is set without pooler_mode"));
}

TEST_CASE("without pooler mode, a session behind the pooler would carry the engine's settings to other clients",
          "[pooler]") {
  // What pooler_mode prevents, shown on the pooler itself: a session-level SET in one transaction
  // is what the next client of that server connection finds.
  TestDb db;
  testing::TemporaryPgBouncer::Options one;
  one.server_connections = 1;
  testing::TemporaryPgBouncer pooler(db.url(), one);
  pqxx::connection engine_like(pooler.url());
  pqxx::nontransaction(engine_like).exec("SET enable_seqscan = off");
  pqxx::connection stranger(pooler.url());
  CHECK(pqxx::nontransaction(stranger).exec1("SHOW enable_seqscan")[0].as<std::string>() == "off");
}

TEST_CASE("a user the pooler does not know fails the start at once, saying what to change", "[pooler][bad_input]") {
  TestDb db;
  testing::TemporaryPgBouncer pooler(db.url());  // knows the server URL's user only
  EngineOptions o = through(pooler.url(), db);
  o.database_url = as_role(pooler.url(), "nobody_the_pooler_knows");
  o.database_unavailable_after = 30s;  // a refusal retried would take this long
  Engine engine(o);
  register_all(engine);
  const auto began = std::chrono::steady_clock::now();
  expect_throw<DatabaseRefused>([&] { engine.start(); }, "authentication failed", "auth_file");
  CHECK(std::chrono::steady_clock::now() - began < 5s);
}
