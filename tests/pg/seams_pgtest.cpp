// Features where they meet: time skipping with running bodies, shutdown with cancellation and
// timeouts, cancels with continue-as-new.
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <catch2/catch.hpp>

#include <atomic>
#include <sstream>
#include <thread>

#include "base/log.hpp"
#include "support/test_db.hpp"
#include "support/test_workflows.hpp"

using namespace durable;
using namespace durable::test;

namespace {

using Clock = std::chrono::steady_clock;

std::atomic<int> slow_runs{0};
std::atomic<bool> slow_saw_cancelled{false};
std::atomic<Clock::rep> slow_cancelled_at{0};

// Runs `ms` (heartbeating when asked, and noting when cancelled() turned true), retried up to 3
// times.
struct SlowInput {
  int ms = 0;
  bool heartbeat = false;
  int timeout_ms = 30000;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(SlowInput, ms, heartbeat, timeout_ms)

struct SlowBody {
  static constexpr auto name = "slow_body";
  int operator()(ActivityContext& ctx, const SlowInput& in) const {
    ++slow_runs;
    const auto until = Clock::now() + std::chrono::milliseconds{in.ms};
    while (Clock::now() < until) {
      if (in.heartbeat) ctx.heartbeat();
      if (ctx.cancelled() && !slow_saw_cancelled.exchange(true)) {
        slow_cancelled_at = Clock::now().time_since_epoch().count();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds{10});
    }
    return in.ms;
  }
};

struct CallsSlow {
  static constexpr auto name = "calls_slow";
  int operator()(WorkflowContext& ctx, const SlowInput& in) {
    return ctx.call<SlowBody>(
        in, {.retry = RetryPolicy{.max_attempts = 3, .backoff = Backoff::constant, .base = Duration{0}},
             .timeout = std::chrono::milliseconds{in.timeout_ms}});
  }
};

// Continues as new `total` times at once, then returns its count: a chain that cancels race.
struct Restarts {
  static constexpr auto name = "restarts";
  int operator()(WorkflowContext& ctx, const int& n) {
    if (n < 200) ctx.continue_as_new(n + 1);
    return n;
  }
};

void reset() {
  slow_runs = 0;
  slow_saw_cancelled = false;
  slow_cancelled_at = 0;
}

bool slow_running(const TestDb& db) { return db.count("SELECT count(*) FROM {s}.tasks WHERE status = 'running'") == 1; }

// Starts a run of `in` on an engine with a 5 s shutdown grace, and stops the engine while its body
// runs. Returns when stop() does.
void stop_while_running(const TestDb& db, const std::string& id, const SlowInput& in, Clock::time_point& stopping) {
  reset();
  EngineOptions o = db.options();
  o.shutdown_grace = std::chrono::seconds{5};
  Engine engine(o);
  engine.add<SlowBody>().add<CallsSlow>();
  engine.start();
  engine.start_workflow<CallsSlow>(id, in);
  REQUIRE(wait_until([&] { return slow_running(db); }));
  stopping = Clock::now();
  engine.stop();
}

}  // namespace

TEST_CASE("a body running while the test clock jumps an hour runs once", "[pg][timer][testing][timeout]") {
  reset();
  for (const bool heartbeats : {false, true}) {
    DYNAMIC_SECTION((heartbeats ? "heartbeating" : "silent")) {
      RunningEngine env({}, [](Engine& e) { e.add<SlowBody>().add<CallsSlow>(); });
      auto run =
          env.engine.start_workflow<CallsSlow>(heartbeats ? "jump-beats" : "jump-silent", {1500, heartbeats, 30000});
      REQUIRE(wait_until([&] { return slow_running(env.db); }));
      testing::advance_clock(env.db.url(), env.db.schema(), std::chrono::hours{1});
      CHECK(run.result(20s) == 1500);
      CHECK(slow_runs == 1);
      CHECK(env.db.count("SELECT count(*) FROM {s}.attempts") == 0);  // no failed, timed-out or lost attempt
      slow_runs = 0;
    }
  }
}

TEST_CASE("cancelled() turns true as soon as shutdown starts and not when its grace ends", "[pg][shutdown][cancel]") {
  TestDb db;
  Clock::time_point stopping;
  stop_while_running(db, "told-at-shutdown", {1500, false, 30000}, stopping);
  REQUIRE(slow_saw_cancelled);
  const auto told = Clock::time_point{Clock::duration{slow_cancelled_at.load()}} - stopping;
  INFO("cancelled() turned true " << std::chrono::duration_cast<std::chrono::milliseconds>(told).count()
                                  << " ms after stop()");
  CHECK(told < 500ms);
}

TEST_CASE("an attempt that passes its timeout during the shutdown grace is failed and its late result discarded",
          "[pg][shutdown][timeout]") {
  TestDb db;
  Clock::time_point stopping;
  // Runs 2.5 s against a 1 s timeout; stop() begins before the timeout and grants 5 s.
  stop_while_running(db, "times-out-in-grace", {2500, false, 1000}, stopping);
  CHECK(db.count("SELECT count(*) FROM {s}.attempts WHERE error_type = 'durable::ActivityTimeout'") == 1);
  CHECK(db.count("SELECT count(*) FROM {journal} jw WHERE kind = 'activity_completed'") == 0);
}

TEST_CASE("a cancel that meets a continue-as-new's commit is carried to the next run and never lost",
          "[pg][cancel][continue]") {
  RunningEngine env({}, [](Engine& e) { e.add<Restarts>(); });
  // Each chain continues 200 times in a row; a cancel aimed at whichever run is latest meets one
  // of those commits often. A cancel that reports success must end the chain cancelled.
  // Half the cancels go through the management API, half through a handle of the latest run.
  for (int chain = 0; chain < 20; ++chain) {
    auto run = env.engine.start_workflow<Restarts>("restarts-" + std::to_string(chain), 0);
    std::this_thread::sleep_for(std::chrono::milliseconds{3 * chain});
    const bool asked = chain % 2 == 0 ? env.engine.runs().cancel(env.engine.runs().latest(run.id()).run_id,
                                                                 {.actor = "test", .reason = "stop"})
                                      : env.engine.workflow(run.id()).cancel("stop");
    if (!asked) continue;  // it had ended already
    INFO("chain " << chain << ": the cancel reported success");
    CHECK_THROWS_AS(run.result(30s), WorkflowCancelled);
  }
}

namespace {
// Fails at once; its policy allows 3 attempts within a horizon that covers them (3 x 1 s + 2 x 1 s).
struct QuickFailure {
  static constexpr auto name = "quick_failure";
  static ActivityOptions options() {
    return {.retry = RetryPolicy{.max_attempts = 3,
                                 .backoff = Backoff::constant,
                                 .base = std::chrono::seconds{1},
                                 .max_retry_horizon = std::chrono::milliseconds{5500}},
            .timeout = std::chrono::seconds{1}};
  }
  int operator()(ActivityContext&, const int&) const { throw std::runtime_error("quick failure"); }
};
// Holds the only slot for `ms`.
struct HoldsTheSlot {
  static constexpr auto name = "holds_the_slot";
  int operator()(ActivityContext&, const int& ms) const {
    std::this_thread::sleep_for(std::chrono::milliseconds{ms});
    return ms;
  }
};
struct FailsBehindASlot {
  static constexpr auto name = "fails_behind_a_slot";
  std::string operator()(WorkflowContext& ctx, const int&) {
    auto failing = ctx.start<QuickFailure>(0);  // its first attempt fails at once, its retry is due in 1 s
    ctx.sleep(std::chrono::milliseconds{100});
    auto holder = ctx.start<HoldsTheSlot>(6000);  // takes the slot before the retry is due
    try {
      failing.get();
      return "succeeded";
    } catch (const ActivityFailed& e) {
      (void)holder.get();
      return e.what();
    }
  }
};
}  // namespace

TEST_CASE("a retry the horizon cuts short while its policy allows more says so in the error and in a warning",
          "[pg][retry][slot]") {
  std::ostringstream captured;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(captured);
  detail::logger().sinks().push_back(sink);  // the engine's own logger
  {
    RunningEngine env([](EngineOptions& o) { o.activity_max_concurrency = 1; },
                      [](Engine& e) { e.add<QuickFailure>().add<HoldsTheSlot>().add<FailsBehindASlot>(); });
    // Its second attempt waits 6 s for the one slot: its retry would start past the 5.5 s horizon,
    // with one attempt left.
    const std::string error = env.engine.start_workflow<FailsBehindASlot>("behind-a-slot", 0).result(30s);
    CHECK_THAT(error, Catch::Contains("not retried: the next attempt would start past max_retry_horizon"));
  }
  detail::logger().sinks().pop_back();
  CHECK_THAT(captured.str(), Catch::Contains("activity 'quick_failure' (workflow 'behind-a-slot'"));
  CHECK_THAT(captured.str(), Catch::Contains("fails after attempt 2 of 3"));
}
