// Clock skew (docs/reliability.md): engines on hosts whose clocks are an hour ahead or behind
// (libfaketime, Debian's `faketime` package, preloaded into worker processes) share a schema with
// this test's unskewed process. Timers, retries' backoff, timeouts and leases, schedules and
// retention follow the database clock, so each behaves as it does without skew. A skew that
// reached the engine's timing would show as an hour's wait (a test that runs out of time), or as
// no wait at all (a check of the gaps the database saw).
#include <catch2/catch.hpp>

#include <fmt/chrono.h>

#include <filesystem>

#include "support/process.hpp"
#include "support/test_db.hpp"
#include "support/test_workflows.hpp"

using namespace durable;
using namespace durable::test;
using namespace std::chrono_literals;

namespace {

constexpr const char* libfaketime = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";

// A worker serving every test definition on a host whose wall clock is `skew` ("+1h", "-1h")
// off; its monotonic clock, as a real host's, is not. A lease 1 s past a timeout; with
// `retention`, ended runs deleted 10 s after they ended. Killed when the test ends, however it ends.
struct SkewedWorker {
  SkewedWorker(const TestDb& db, const std::string& skew, bool retention = false) {
    REQUIRE(std::filesystem::exists(libfaketime));  // Debian 12: apt install faketime
    // Under AddressSanitizer a preloaded library would come before its runtime, which it refuses.
    const char* asan = std::getenv("ASAN_OPTIONS");
    pid = spawn_program(
        DURABLE_TEST_WORKER, db.url(), {db.schema(), "serve"},
        {std::string("LD_PRELOAD=") + libfaketime, "FAKETIME=" + skew, "DONT_FAKE_MONOTONIC=1",
         std::string("DURABLE_TEST_RETENTION_MS=") + (retention ? "10000" : ""), "DURABLE_TEST_LEASE_MARGIN_MS=1000",
         std::string("ASAN_OPTIONS=") + (asan ? asan : "") + ":verify_asan_link_order=0"});
  }
  ~SkewedWorker() {
    kill(pid, SIGKILL);
    wait_for(pid);
  }
  SkewedWorker(const SkewedWorker&) = delete;
  SkewedWorker& operator=(const SkewedWorker&) = delete;
  pid_t pid = -1;
};

// Seconds from the time in run `workflow_id`'s id (a UUIDv7: the clock of the process that made
// it) to its row's creation (the database clock).
double run_id_ahead_s(const TestDb& db, const std::string& workflow_id) {
  return db
      .query(
          "SELECT extract(epoch FROM to_timestamp(('x' || substr(replace(run_id::text, '-', ''), 1, 12))::bit(48)"
          "::bigint / 1000.0) - created_at) FROM {s}.workflows WHERE workflow_id = '" +
          workflow_id + "'")[0][0]
      .as<double>();
}

}  // namespace

TEST_CASE("an engine whose clock is an hour off times retries, timers and retention by the database clock",
          "[skew][process]") {
  const std::string skew = GENERATE(as<std::string>{}, "+1h", "-1h");
  INFO("the worker's clock " << skew);
  TestDb db;
  Engine client(db.options());  // this process's clock is right
  register_all(client);
  const SkewedWorker worker(db, skew, /*retention=*/true);
  const auto began = std::chrono::steady_clock::now();
  auto steps = client.start_workflow<ClockedStepsWorkflow>("clocked", 300);
  auto sleeper = client.start_workflow<SleepWorkflow>("sleeper", 1500);
  auto parent = client.start_workflow<CallChildWorkflow>("parent", CallChildInput{"child"});
  CHECK(steps.result(30s) == 300);
  CHECK(sleeper.result(30s)["slept_ms"] >= 1500);
  CHECK(parent.result(30s) == "result 2");
  CHECK(std::chrono::steady_clock::now() - began < 20s);
  // The worker's clock was off: the child's run id, made there, is an hour from its row's time.
  const double ahead = run_id_ahead_s(db, "child");
  CHECK(std::abs(ahead - (skew == "+1h" ? 3600 : -3600)) < 120);
  // Each retry waited its 400 ms by the database clock (an hour off would be no wait, or an hour).
  CHECK(db.count("SELECT count(*) FROM (SELECT started_at - lag(ended_at) OVER (ORDER BY attempt) AS gap "
                 "FROM {s}.attempts WHERE run_id = '" +
                 steps.run_id().str() +
                 "' AND error_type IS NOT NULL) g WHERE gap >= interval '400 ms' AND gap < interval '5 s'") == 2);

  // Retention (10 s, on the worker): the runs that ended a minute ago go, one that just ended
  // stays.
  CHECK(client.start_workflow<HelloWorkflow>("fresh", std::string("now")).result(20s) == "hello, now");
  db.query(
      "UPDATE {s}.workflows SET ended_at = ended_at - interval '1 minute' WHERE workflow_id IN "
      "('clocked', 'sleeper', 'parent', 'child')");
  CHECK(wait_until([&] { return db.count("SELECT count(*) FROM {s}.workflows WHERE workflow_id <> 'fresh'") == 0; },
                   15s));
  CHECK(db.count("SELECT count(*) FROM {s}.workflows WHERE workflow_id = 'fresh'") == 1);
}

TEST_CASE("a lease taken by an engine an hour ahead runs out by the database clock for one an hour behind",
          "[skew][process]") {
  TestDb db;
  Engine client(db.options());
  register_all(client);
  const SkewedWorker ahead(db, "+1h");
  auto steps = client.start_workflow<ClockedStepsWorkflow>("leased", 1500);
  // Its slow step (2 s timeout) leased to the worker ahead, which then freezes.
  REQUIRE(wait_until(
      [&] { return db.count("SELECT count(*) FROM {s}.tasks WHERE name = 'slow' AND lease_owner IS NOT NULL") == 1; },
      20s));
  kill(ahead.pid, SIGSTOP);
  const auto frozen = std::chrono::steady_clock::now();
  const SkewedWorker behind(db, "-1h");
  // Taken over once the lease ran out (2 s + 1 s), run again (1.5 s), then the 1 s sleep.
  CHECK(steps.result(30s) == 1500);
  CHECK(std::chrono::steady_clock::now() - frozen < 20s);
}

TEST_CASE("a schedule fires at its time by the database clock on an engine an hour behind or ahead",
          "[skew][process][schedules]") {
  const std::string skew = GENERATE(as<std::string>{}, "+1h", "-1h");
  INFO("the worker's clock " << skew);
  TestDb db;
  Engine client(db.options());
  register_all(client);
  // An every-minute schedule, then the database clock two seconds before its first fire (time
  // skipping). Set after the create: a create that took seconds would find the fire gone past.
  migrate_schema(db.url(), db.schema());
  client.schedules().create("tick", {.workflow = HelloWorkflow::name, .input = "tick", .cron = "* * * * *"});
  const auto minute = client.schedules().get("tick").next_fire;
  testing::set_clock(db.url(), db.schema(), minute - 2s);
  const SkewedWorker worker(db, skew);
  const std::string first =
      fmt::format("tick:{:%Y-%m-%dT%H:%M:%S}+00:00", std::chrono::floor<std::chrono::seconds>(minute));
  CHECK(wait_until([&] { return db.count("SELECT count(*) FROM {s}.workflows WHERE workflow_id LIKE 'tick:%'") > 0; },
                   20s));
  std::this_thread::sleep_for(1s);  // no other fire follows (an hour of them, or one an hour off)
  const auto fired = db.query("SELECT workflow_id FROM {s}.workflows WHERE workflow_id LIKE 'tick:%'");
  REQUIRE(fired.size() == 1);
  CHECK(fired[0][0].as<std::string>() == first);
}
