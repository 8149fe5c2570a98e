#include <catch2/catch.hpp>

#include "support/expect.hpp"
#include "support/test_db.hpp"
#include "support/test_workflows.hpp"

using namespace durable;
using namespace durable::test;

TEST_CASE_METHOD(RunningEngine, "a workflow calls an activity and returns its result", "[pg][workflow]") {
  auto run = engine.start_workflow<HelloWorkflow>("hello-1", "world");
  CHECK(run.result(30s) == "hello, world");
  CHECK(run.status() == WorkflowStatus::completed);
  // The journal holds the whole story, gap-free: started, scheduled, completed, workflow completed.
  auto kinds = db.query("SELECT kind FROM {journal} jw WHERE workflow_id = 'hello-1' ORDER BY seq");
  REQUIRE(kinds.size() == 4);
  CHECK(kinds[0][0].as<std::string>() == "workflow_started");
  CHECK(kinds[1][0].as<std::string>() == "activity_scheduled");
  CHECK(kinds[2][0].as<std::string>() == "activity_completed");
  CHECK(kinds[3][0].as<std::string>() == "workflow_completed");
  CHECK(db.count("SELECT max(seq) + 1 - count(*) FROM {journal} jw WHERE workflow_id = 'hello-1'") == 0);
}

TEST_CASE_METHOD(RunningEngine, "a handle found by id from another engine reads the same run", "[pg][workflow]") {
  auto run = engine.start_workflow<HelloWorkflow>("hello-2", "again");
  run.result(30s);
  Engine client(db.options());  // never started: used only to look the run up
  register_all(client);
  auto found = client.workflow<HelloWorkflow>("hello-2");
  CHECK(found.run_id() == run.run_id());
  CHECK(found.result(5s) == "hello, again");
  CHECK_THROWS_AS(client.workflow("no-such-run"), WorkflowNotFound);
}

TEST_CASE("a thin client waiting for a result hears at once of its end in another engine", "[pg][workflow][wake]") {
  RunningEngine worker;
  EngineOptions options = worker.db.options();
  options.poll_interval = std::chrono::seconds{30};  // a result seen by polling would take this long
  Engine client(options);                            // never started: it only starts runs and waits
  register_all(client);
  for (int i = 0; i < 2; ++i) {  // the first wait opens the LISTEN session, the second reuses it
    auto run = client.start_workflow<ParallelSlowWorkflow>("thin-" + std::to_string(i), 1);  // one 300 ms activity
    const auto started = std::chrono::steady_clock::now();
    CHECK(run.result(60s) == 300);
    CHECK(std::chrono::steady_clock::now() - started < 10s);
  }
}

TEST_CASE("activities started before waiting run in parallel", "[pg][workflow][parallel]") {
  RunningEngine env([](EngineOptions& o) { o.activity_max_concurrency = 4; });
  auto& db = env.db;
  auto& engine = env.engine;
  CHECK(engine.start_workflow<ParallelWorkflow>("sum-10", 10).result(30s) == 55);

  // Four 300 ms activities on four slots overlap: their run intervals intersect.
  engine.start_workflow<ParallelSlowWorkflow>("slow-4", 4).result(30s);
  // Each completed event holds its successful attempt's start, and its own time is the end.
  CHECK(db.count("SELECT count(*) FROM {completed} c WHERE workflow_id = 'slow-4'") == 4);
  CHECK(db.count("SELECT count(*) FROM {completed} a, {completed} b WHERE a.workflow_id = 'slow-4' "
                 "AND b.workflow_id = 'slow-4' AND a.step < b.step "
                 "AND a.attempt_started_at < b.ended_at AND b.attempt_started_at < a.ended_at") >= 1);
}

TEST_CASE("the dispatcher never runs more activity bodies than its pool has slots", "[pg][dispatcher]") {
  // Bodies count themselves: an attempt's row ends at its commit, after its slot was given back.
  static std::atomic<int> running{0}, most{0};
  running = most = 0;
  static const ActivityRef<int, int> counted{"counted"};
  static const WorkflowRef<int, int> fan_out{"fan_out_counted"};
  RunningEngine env([](EngineOptions& o) { o.activity_max_concurrency = 2; },
                    [](Engine& engine) {
                      engine.add_activity(counted, [](ActivityContext&, const int& ms) {
                        const int now = ++running;
                        for (int seen = most; now > seen && !most.compare_exchange_weak(seen, now);) {
                        }
                        std::this_thread::sleep_for(std::chrono::milliseconds{ms});
                        --running;
                        return ms;
                      });
                      engine.add_workflow(fan_out, [](WorkflowContext& ctx, const int& n) {
                        std::vector<Future<int>> futures;
                        for (int i = 0; i < n; ++i) futures.push_back(ctx.start(counted, 300));
                        int total = 0;
                        for (auto& f : futures) total += f.get();
                        return total;
                      });
                    });
  CHECK(env.engine.start_workflow(fan_out, "slow-6", 6).result(30s) == 1800);
  CHECK(most == 2);
  // Claimed and not yet committed (an attempt's row spans claim to commit): at most twice the slots.
  CHECK(env.db.count("SELECT coalesce(max(c), 0) FROM (SELECT (SELECT count(*) FROM {s}.attempts b "
                     "WHERE b.started_at <= a.started_at AND b.ended_at > a.started_at) AS c FROM {s}.attempts a) x") <=
        4);
}

TEST_CASE_METHOD(RunningEngine, "a durable sleep waits for the database clock and survives replay",
                 "[pg][workflow][timer]") {
  auto run = engine.start_workflow<SleepWorkflow>("nap", 700);
  auto result = run.result(30s);
  CHECK(result["slept_ms"].get<long>() >= 700);
  CHECK(result["id"].get<std::string>().size() == 36);
  CHECK(db.count("SELECT count(*) FROM {journal} jw WHERE workflow_id = 'nap' AND kind = 'timer_fired'") == 1);
  // now() and uuid() were journaled, so a replay gets the same values.
  CHECK(db.count("SELECT count(*) FROM {journal} jw WHERE workflow_id = 'nap' AND kind = 'side_effect'") == 3);
}

TEST_CASE_METHOD(RunningEngine, "a failed activity reaches the workflow as ActivityFailed, which it may catch",
                 "[pg][workflow][failure]") {
  auto result = engine.start_workflow<CatchFailureWorkflow>("catch", "card declined").result(30s);
  CHECK(result["caught"] == true);
  CHECK(result["type"] == "std::runtime_error");
  CHECK(result["message"] == "boom: card declined");
  CHECK(result["activity"] == "boom");
  // The default policy is a single attempt.
  CHECK(db.count("SELECT attempt FROM {s}.tasks WHERE workflow_id = 'catch'") == 1);
}

TEST_CASE_METHOD(RunningEngine, "an exception escaping the workflow fails the run and journals its message",
                 "[pg][workflow][failure]") {
  auto run = engine.start_workflow<FailingWorkflow>("doomed", "no stock");
  try {
    run.result(30s);
    FAIL("result() should have thrown");
  } catch (const WorkflowFailed& e) {
    CHECK(e.error_type() == "std::logic_error");
    CHECK(std::string(e.what()) == "workflow gave up: no stock");
  }
  CHECK(run.status() == WorkflowStatus::failed);
  CHECK(db.count("SELECT count(*) FROM {journal} jw WHERE workflow_id = 'doomed' AND kind = 'workflow_failed' "
                 "AND data->>'error_message' = 'workflow gave up: no stock'") == 1);
}

TEST_CASE("a duplicate start is rejected and starts nothing", "[pg][workflow][idempotency]") {
  TestDb db;
  Engine engine(db.options());
  register_all(engine);
  auto first = engine.start_workflow<HelloWorkflow>("once", "a");
  try {
    engine.start_workflow<HelloWorkflow>("once", "b");
    FAIL("a duplicate start should throw");
  } catch (const WorkflowAlreadyStarted& e) {
    CHECK(e.existing_run_id() == first.run_id());
    CHECK(e.existing_status() == "running");
  }
  CHECK(db.count("SELECT count(*) FROM {s}.workflows") == 1);
  CHECK(db.count("SELECT count(*) FROM {s}.journal_events") == 1);
}

TEST_CASE_METHOD(RunningEngine, "result() gives up with Timeout while the run goes on, and cancel() ends it",
                 "[pg][workflow]") {
  auto run = engine.start_workflow<SleepWorkflow>("long-nap", 3600 * 1000);
  CHECK_THROWS_AS(run.result(300ms), Timeout);
  CHECK(run.status() == WorkflowStatus::running);
  CHECK(run.cancel("no time to nap"));
  CHECK(run.cancel("asked twice"));  // running still, or just ended: the first reason stands
  auto cancelled = expect_throw<WorkflowCancelled>([&] { run.result(10s); }, "no time to nap");
  CHECK(cancelled.reason() == "no time to nap");
  CHECK(run.status() == WorkflowStatus::cancelled);
  CHECK_FALSE(run.cancel());
}

TEST_CASE("stop() hands a still-running activity back, and the next engine runs it without counting an attempt",
          "[pg][shutdown]") {
  TestDb db;
  auto options = db.options();
  options.shutdown_grace = 100ms;
  {
    Engine engine(options);
    register_all(engine);
    engine.start();
    engine.start_workflow<SlowWorkflow>("handed-back", 1500);  // outlasts the 100 ms grace
    REQUIRE(wait_until([&] { return db.count("SELECT count(*) FROM {s}.tasks WHERE status = 'running'") == 1; }));
    engine.stop();  // grace runs out while the body sleeps: the task is released
    CHECK(db.count("SELECT count(*) FROM {s}.tasks WHERE status = 'pending' AND attempt = 0") == 1);
  }
  Engine engine(db.options());
  register_all(engine);
  engine.start();
  CHECK(engine.workflow<SlowWorkflow>("handed-back").result(30s) == 1500);
  CHECK(db.count("SELECT attempt FROM {completed} c WHERE workflow_id = 'handed-back'") == 1);
  // The late outcome of the released attempt was discarded: one completion in the journal.
  CHECK(
      db.count("SELECT count(*) FROM {journal} jw WHERE workflow_id = 'handed-back' AND kind = 'activity_completed'") ==
      1);
}

TEST_CASE("an engine stopped with work in flight hands it to the next engine", "[pg][shutdown]") {
  TestDb db;
  {
    Engine engine(db.options());
    register_all(engine);
    engine.start();
    engine.start_workflow<ChainWorkflow>("chain-stop", 0);
    std::this_thread::sleep_for(100ms);
  }  // stop() in the destructor
  Engine engine(db.options());
  register_all(engine);
  engine.start();
  CHECK(engine.workflow<ChainWorkflow>("chain-stop").result(30s) == 5);
  CHECK(db.count(
            "SELECT count(*) FROM {journal} jw WHERE workflow_id = 'chain-stop' AND kind = 'activity_completed'") == 5);
}

namespace {

// What the unawaited activities below saw, shared with the test thread.
struct Sightings {
  std::atomic<int> second_attempts{0};  // a retry that ran its body
  std::atomic<bool> saw_cancelled{false};
};
Sightings sightings;

// Fails its first attempt at once; a second attempt (2 s later) would run the body for real.
struct RetriedLater {
  static constexpr auto name = "retried_later";
  static ActivityOptions options() {
    return {.retry = RetryPolicy{.max_attempts = 3, .backoff = Backoff::constant, .base = 2s}, .timeout = 5s};
  }
  int operator()(ActivityContext& ctx, const int&) const {
    if (ctx.attempt() == 1) throw std::runtime_error("not yet");
    ++sightings.second_attempts;
    return 2;
  }
};

// Runs until its workflow no longer wants it, heartbeating.
struct RunsUntilCancelled {
  static constexpr auto name = "runs_until_cancelled";
  static ActivityOptions options() { return {.timeout = 30s}; }
  int operator()(ActivityContext& ctx, const int&) const {
    const auto until = std::chrono::steady_clock::now() + 20s;
    while (std::chrono::steady_clock::now() < until) {
      if (!ctx.heartbeat() && ctx.cancelled()) {
        sightings.saw_cancelled = true;
        return 0;
      }
      std::this_thread::sleep_for(50ms);
    }
    return 1;
  }
};

// Runs until its workflow no longer wants it, never heartbeating: only cancelled() tells it.
std::atomic<bool> silent_saw_cancelled{false};
struct SilentUntilCancelled {
  static constexpr auto name = "silent_until_cancelled";
  static ActivityOptions options() { return {.timeout = 60s}; }
  int operator()(ActivityContext& ctx, const int&) const {
    const auto until = std::chrono::steady_clock::now() + 30s;
    while (std::chrono::steady_clock::now() < until) {
      if (ctx.cancelled()) {
        silent_saw_cancelled = true;
        return 0;
      }
      std::this_thread::sleep_for(10ms);
    }
    return 1;
  }
};
struct AwaitsSilentActivity {
  static constexpr auto name = "awaits_silent_activity";
  int operator()(WorkflowContext& ctx, const int&) { return ctx.call<SilentUntilCancelled>(0); }
};

// Starts both without awaiting them, then fails.
struct LeavesWorkBehind {
  static constexpr auto name = "leaves_work_behind";
  int operator()(WorkflowContext& ctx, const int& wait_ms) {
    (void)ctx.start<RetriedLater>(0);
    (void)ctx.start<RunsUntilCancelled>(0);
    ctx.sleep(std::chrono::milliseconds{wait_ms});  // the first attempt fails, the other body starts
    return ctx.call<BoomActivity>("the run fails with work left");
  }
};

}  // namespace

TEST_CASE("a run that ends drops what it never awaited: a pending retry never runs, a running body sees cancelled()",
          "[pg][workflow][unawaited]") {
  RunningEngine env({}, [](Engine& e) { e.add<RetriedLater>().add<RunsUntilCancelled>().add<LeavesWorkBehind>(); });
  auto run = env.engine.start_workflow<LeavesWorkBehind>("leaves-work", 300);
  CHECK_THROWS_AS(run.result(30s), WorkflowFailed);
  CHECK(wait_until([] { return sightings.saw_cancelled.load(); }, 5s));
  std::this_thread::sleep_for(3s);  // past the retry's 2 s delay
  CHECK(sightings.second_attempts == 0);
  CHECK(env.db.count("SELECT count(*) FROM {s}.tasks WHERE workflow_id = 'leaves-work' AND status = 'cancelled'") == 2);
}

TEST_CASE("a body that never heartbeats sees cancelled() soon after its run is cancelled",
          "[pg][workflow][unawaited]") {
  RunningEngine env({}, [](Engine& e) { e.add<SilentUntilCancelled>().add<AwaitsSilentActivity>(); });
  silent_saw_cancelled = false;
  auto run = env.engine.start_workflow<AwaitsSilentActivity>("silent", 0);
  REQUIRE(wait_until([&] { return env.db.count("SELECT count(*) FROM {s}.tasks WHERE status = 'running'") == 1; }));
  CHECK(run.cancel());
  // The engine checks its running tasks every 500 ms; the body would otherwise run its 30 s.
  CHECK(wait_until([] { return silent_saw_cancelled.load(); }, 5s));
}

TEST_CASE_METHOD(RunningEngine, "time skipping fires a 24-hour durable sleep at once", "[pg][timer][testing]") {
  auto run = engine.start_workflow<SleepWorkflow>("day-nap", 24 * 3600 * 1000);
  REQUIRE(
      wait_until([&] { return db.count("SELECT count(*) FROM {s}.journal_events WHERE kind = 'timer_started'") > 0; }));
  testing::advance_clock(db.url(), db.schema(), std::chrono::hours{24});
  auto result = run.result(10s);
  CHECK(result["slept_ms"].get<long>() >= 24L * 3600 * 1000);
}

namespace {
// Leaves a one-hour timer behind and waits for a "go" message: a timer started and never
// awaited (`lost_race` false), or one that lost a wait_any to an activity (true).
struct LeavesTimerBehind {
  static constexpr auto name = "leaves_timer_behind";
  std::string operator()(WorkflowContext& ctx, const bool& lost_race) {
    auto timer = ctx.start_timer(std::chrono::hours{1});
    if (lost_race) {
      auto work = ctx.start<SlowActivity>(0);
      if (ctx.wait_any(work, timer) != 0) return "the timer won";
    }
    return ctx.receive<std::string>("go");
  }
};
// Ends with a one-hour timer it never awaited.
struct EndsWithTimer {
  static constexpr auto name = "ends_with_timer";
  std::string operator()(WorkflowContext& ctx, const int&) {
    (void)ctx.start_timer(std::chrono::hours{1});
    return "ended";
  }
};
}  // namespace

TEST_CASE("a timer the code does not wait on does not wake its run when it comes due", "[pg][timer][unawaited]") {
  RunningEngine env({}, [](Engine& e) { e.add<LeavesTimerBehind>().add<EndsWithTimer>(); });
  auto never_awaited = env.engine.start_workflow<LeavesTimerBehind>("timer-never-awaited", false);
  auto lost_race = env.engine.start_workflow<LeavesTimerBehind>("timer-lost-race", true);
  CHECK(env.engine.start_workflow<EndsWithTimer>("timer-run-ended", 0).result(30s) == "ended");
  const auto waiting_for_go = [&] {
    return env.db.count("SELECT count(*) FROM {s}.journal_events WHERE kind = 'receive_started'") == 2;
  };
  REQUIRE(wait_until([&] { return waiting_for_go() && env.engine.metrics().activity_in_flight == 0; }));
  REQUIRE(wait_until([&] { return env.db.count("SELECT count(*) FROM {s}.workflows WHERE runnable") == 0; }));
  // Nothing is due for any of the three: no wake-up time, so no replay once the hour has passed.
  CHECK(env.db.count("SELECT count(*) FROM {s}.workflows WHERE wake_at IS NOT NULL") == 0);
  testing::advance_clock(env.db.url(), env.db.schema(), std::chrono::hours{2});
  CHECK(env.db.count("SELECT count(*) FROM {s}.workflows WHERE status = 'running' AND (runnable OR wake_at <= "
                     "{s}.db_now())") == 0);
  // What they wait for still wakes them, and the timers fired meanwhile are found due then.
  env.engine.send("timer-never-awaited", "go", std::string("went"));
  env.engine.send("timer-lost-race", "go", std::string("went too"));
  CHECK(never_awaited.result(30s) == "went");
  CHECK(lost_race.result(30s) == "went too");
}
