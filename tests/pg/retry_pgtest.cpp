#include <catch2/catch.hpp>
#include <cmath>

#include "base/failpoint.hpp"
#include "support/test_db.hpp"
#include "support/test_workflows.hpp"

using namespace durable;
using namespace durable::test;

namespace {

// A policy carried in the workflow input, so each test picks its own call-site options.
struct PolicyInput {
  int fail_times = 0;  // attempts 1..fail_times throw
  int max_attempts = 1;
  std::string backoff = "constant";
  long base_ms = 0;
  long max_backoff_ms = 60000;
  long horizon_ms = 24L * 3600 * 1000;
  long timeout_ms = 30000;
  double jitter = 0;
  std::string error = "runtime";  // runtime | invalid_argument | non_retryable
  long hang_ms = 0;               // attempt 1 runs this long instead (its lease taken from it meanwhile)
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(PolicyInput, fail_times, max_attempts, backoff, base_ms, max_backoff_ms, horizon_ms,
                                   timeout_ms, jitter, error, hang_ms)

struct FlakyActivity {
  static constexpr auto name = "flaky";
  int operator()(ActivityContext& ctx, const PolicyInput& in) const {
    if (ctx.attempt() == 1 && in.hang_ms > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds{in.hang_ms});
      return ctx.attempt();
    }
    if (ctx.attempt() > in.fail_times) return ctx.attempt();
    const std::string what = "flaky failure on attempt " + std::to_string(ctx.attempt());
    if (in.error == "invalid_argument") throw std::invalid_argument(what);
    if (in.error == "non_retryable") throw NonRetryableError(what);
    throw std::runtime_error(what);
  }
};

struct RetryWorkflow {
  static constexpr auto name = "retrying";
  nlohmann::json operator()(WorkflowContext& ctx, const PolicyInput& in) {
    RetryPolicy policy{.max_attempts = in.max_attempts,
                       .backoff = in.backoff == "exponential" ? Backoff::exponential : Backoff::constant,
                       .base = Duration{in.base_ms},
                       .max_backoff = Duration{in.max_backoff_ms},
                       .max_retry_horizon = Duration{in.horizon_ms},
                       .jitter = in.jitter,
                       .non_retryable_errors = {"std::invalid_argument"}};
    try {
      return {{"attempt", ctx.call<FlakyActivity>(in, {.retry = policy, .timeout = Duration{in.timeout_ms}})}};
    } catch (const ActivityFailed& e) {
      return {{"failed", e.error_type()}, {"message", e.error_message()}, {"attempts", e.attempts()}};
    }
  }
};

// Declares its own policy: call sites may override it.
struct DeclaredActivity {
  static constexpr auto name = "declared";
  static ActivityOptions options() { return {.retry = RetryPolicy{.max_attempts = 3}, .timeout = 7s}; }
  int operator()(ActivityContext& ctx, const int&) const { return ctx.attempt(); }
};
struct ResolutionWorkflow {
  static constexpr auto name = "resolution";
  int operator()(WorkflowContext& ctx, const int&) {
    ctx.call<DeclaredActivity>(1);                                             // declared options
    ctx.call<DeclaredActivity>(2, {.retry = RetryPolicy{.max_attempts = 5}});  // call-site retry wins
    ctx.call<DeclaredActivity>(3, {.timeout = 2s});                            // call-site timeout wins
    return ctx.call<EchoActivity>("x").size();                                 // defaults
  }
};

// Runs `ms` on its first attempt (past its timeout), then answers at once.
struct OverrunActivity {
  static constexpr auto name = "overrun";
  static ActivityOptions options() { return {.retry = RetryPolicy{.max_attempts = 2}, .timeout = 200ms}; }
  std::string operator()(ActivityContext& ctx, const int& ms) const {
    if (ctx.attempt() == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds{ms});
      return "late";
    }
    return "on time";
  }
};

// Works for `ms`, heartbeating every 50 ms, with a 1 s timeout: alive only thanks to the beats.
struct HeartbeatActivity {
  static constexpr auto name = "heartbeating";
  static ActivityOptions options() { return {.retry = RetryPolicy{.max_attempts = 1}, .timeout = 1s}; }
  int operator()(ActivityContext& ctx, const int& ms) const {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds{ms};
    int beats = 0;
    while (std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(50ms);
      if (!ctx.heartbeat({{"beats", ++beats}})) throw std::runtime_error("lost the lease");
    }
    return beats;
  }
};

// Attempt 1 records progress in a heartbeat and fails; attempt 2 resumes from it.
struct ResumingActivity {
  static constexpr auto name = "resuming";
  static ActivityOptions options() { return {.retry = RetryPolicy{.max_attempts = 2}}; }
  nlohmann::json operator()(ActivityContext& ctx, const int&) const {
    if (ctx.attempt() == 1) {
      ctx.heartbeat({{"done_items", 42}});
      throw std::runtime_error("crashed after 42 items");
    }
    return ctx.last_heartbeat();
  }
};

struct OversizedHeartbeatActivity {
  static constexpr auto name = "oversized_heartbeat";
  int operator()(ActivityContext& ctx, const int&) const {
    ctx.heartbeat(std::string(max_heartbeat_details_bytes + 1, 'x'));
    return 0;
  }
};

std::atomic<bool> saw_cancellation{false};
struct CancellableActivity {
  static constexpr auto name = "cancellable";
  static ActivityOptions options() { return {.timeout = 10s}; }
  int operator()(ActivityContext& ctx, const int&) const {
    while (ctx.heartbeat()) std::this_thread::sleep_for(20ms);
    saw_cancellation = ctx.cancelled();
    return 0;
  }
};

// Heartbeats every 20 ms until a heartbeat is refused; then records whether that heartbeat moved
// its deadline, and returns.
std::atomic<bool> heartbeat_refused{false};
std::atomic<bool> refused_heartbeat_moved_deadline{false};
struct FencedHeartbeatActivity {
  static constexpr auto name = "fenced_heartbeat";
  static ActivityOptions options() { return {.timeout = 10s}; }
  int operator()(ActivityContext& ctx, const int&) const {
    for (int beat = 1;; ++beat) {
      const auto deadline = ctx.deadline();
      std::this_thread::sleep_for(20ms);
      if (!ctx.heartbeat({{"beat", beat}})) {
        refused_heartbeat_moved_deadline = ctx.deadline() != deadline;
        heartbeat_refused = true;
        return beat;
      }
    }
  }
};

const WorkflowRef<int, int> overrun_workflow{"overrun_workflow"};
const WorkflowRef<int, int> heartbeat_workflow{"heartbeat_workflow"};
const WorkflowRef<int, nlohmann::json> resuming_workflow{"resuming_workflow"};
const WorkflowRef<int, nlohmann::json> oversized_workflow{"oversized_workflow"};
const WorkflowRef<int, int> cancellable_workflow{"cancellable_workflow"};
const WorkflowRef<int, int> fenced_heartbeat_workflow{"fenced_heartbeat_workflow"};

struct RetryEngine {
  explicit RetryEngine(Duration lease_margin = 5s) : engine(with_margin(db.options(), lease_margin)) {
    register_all(engine);
    engine.add<FlakyActivity>().add<RetryWorkflow>().add<DeclaredActivity>().add<ResolutionWorkflow>();
    engine.add<OverrunActivity>().add<HeartbeatActivity>().add<ResumingActivity>().add<OversizedHeartbeatActivity>();
    engine.add<CancellableActivity>().add<FencedHeartbeatActivity>();
    engine.add_workflow(overrun_workflow, [](WorkflowContext& ctx, const int& ms) {
      return ctx.call<OverrunActivity>(ms) == "on time" ? 1 : 0;
    });
    engine.add_workflow(heartbeat_workflow,
                        [](WorkflowContext& ctx, const int& ms) { return ctx.call<HeartbeatActivity>(ms); });
    engine.add_workflow(resuming_workflow,
                        [](WorkflowContext& ctx, const int& n) { return ctx.call<ResumingActivity>(n); });
    engine.add_workflow(oversized_workflow, [](WorkflowContext& ctx, const int& n) -> nlohmann::json {
      try {
        return ctx.call<OversizedHeartbeatActivity>(n);
      } catch (const ActivityFailed& e) {
        return {{"type", e.error_type()}, {"message", e.error_message()}};
      }
    });
    engine.add_workflow(cancellable_workflow,
                        [](WorkflowContext& ctx, const int& n) { return ctx.call<CancellableActivity>(n); });
    engine.add_workflow(fenced_heartbeat_workflow,
                        [](WorkflowContext& ctx, const int& n) { return ctx.call<FencedHeartbeatActivity>(n); });
    engine.start();
  }

  // Drives a run to its end, jumping the database clock to each pending retry instead of waiting.
  nlohmann::json run_skipping_time(const PolicyInput& input, const std::string& id) {
    auto run = engine.start_workflow<RetryWorkflow>(id, input);
    while (run.status() == WorkflowStatus::running) {
      auto wait = db.query(
          "SELECT ceil(extract(epoch FROM available_at - {s}.db_now()) * 1000)::bigint FROM "
          "{s}.tasks WHERE status = 'pending' AND available_at > {s}.db_now()");
      if (!wait.empty()) testing::advance_clock(db.url(), db.schema(), Duration{wait[0][0].as<long>()});
      std::this_thread::sleep_for(5ms);
    }
    return run.result(5s);
  }

  // Each retry's scheduled delay, read back from the journal of attempts, in ms.
  std::vector<long> delays(const std::string& id) {
    std::vector<long> out;
    for (const auto& row : db.query("SELECT round(extract(epoch FROM a.retry_at - a.ended_at) * 1000)::bigint "
                                    "FROM {s}.attempts a JOIN {s}.workflows w USING (run_id) WHERE w.workflow_id = '" +
                                    id + "' AND a.retry_at IS NOT NULL ORDER BY a.attempt")) {
      out.push_back(row[0].as<long>());
    }
    return out;
  }

  static EngineOptions with_margin(EngineOptions o, Duration margin) {
    o.lease_margin = margin;
    return o;
  }

  TestDb db;
  Engine engine;
};

// Leases of timeout + 200 ms, so that an activity can outlive its first lease by far.
struct ShortLeaseEngine : RetryEngine {
  ShortLeaseEngine() : RetryEngine(200ms) {}
};

}  // namespace

TEST_CASE_METHOD(RetryEngine, "a constant policy waits base between attempts", "[pg][retry]") {
  auto result = run_skipping_time({.fail_times = 3, .max_attempts = 5, .base_ms = 50000}, "constant");
  CHECK(result["attempt"] == 4);
  CHECK(delays("constant") == std::vector<long>{50000, 50000, 50000});
  // No attempt started before its retry time.
  CHECK(db.count("SELECT count(*) FROM {s}.attempts a JOIN {s}.attempts b ON a.task_id = b.task_id "
                 "AND b.attempt = a.attempt + 1 WHERE b.started_at < a.retry_at") == 0);
  CHECK(db.count("SELECT count(*) FROM {s}.attempts a JOIN {completed} c ON c.run_id = a.run_id "  // the last one
                 "AND c.step = a.step AND c.attempt = a.attempt + 1 WHERE c.attempt_started_at >= a.retry_at") == 1);
}

TEST_CASE_METHOD(RetryEngine, "an exponential policy doubles from base, capped by max_backoff", "[pg][retry]") {
  auto result = run_skipping_time(
      {.fail_times = 5, .max_attempts = 6, .backoff = "exponential", .base_ms = 60000, .max_backoff_ms = 300000},
      "exponential");
  CHECK(result["attempt"] == 6);
  CHECK(delays("exponential") == std::vector<long>{60000, 120000, 240000, 300000, 300000});
}

TEST_CASE_METHOD(RetryEngine, "jitter spreads each delay within [d, d * (1 + jitter)]", "[pg][retry]") {
  run_skipping_time({.fail_times = 4, .max_attempts = 5, .base_ms = 40000, .jitter = 0.5}, "jittered");
  const auto spread = delays("jittered");
  CHECK(spread.size() == 4);
  for (long d : spread) {
    CHECK(d >= 40000);
    CHECK(d <= 60000);
  }
}

TEST_CASE_METHOD(RetryEngine, "attempts run out: the workflow sees ActivityFailed with the last error", "[pg][retry]") {
  auto result = run_skipping_time({.fail_times = 9, .max_attempts = 3, .base_ms = 1000}, "exhausted");
  CHECK(result["failed"] == "std::runtime_error");
  CHECK(result["message"] == "flaky failure on attempt 3");
  CHECK(result["attempts"] == 3);
  CHECK(db.count("SELECT count(*) FROM {s}.attempts WHERE outcome = 'failed'") == 3);
}

TEST_CASE_METHOD(RetryEngine, "a non-retryable error ends the attempts at once", "[pg][retry]") {
  auto thrown = run_skipping_time({.fail_times = 9, .max_attempts = 5, .error = "non_retryable"}, "fatal");
  CHECK(thrown["failed"] == "durable::NonRetryableError");
  CHECK(thrown["attempts"] == 1);
  auto declared = run_skipping_time({.fail_times = 9, .max_attempts = 5, .error = "invalid_argument"}, "declared");
  CHECK(declared["failed"] == "std::invalid_argument");
  CHECK(declared["attempts"] == 1);
}

TEST_CASE_METHOD(RetryEngine, "a retry that would start past the horizon is not scheduled", "[pg][retry]") {
  // Worst case 3 x 1 s + 2 x 60 s fits the 180 s horizon; the test then loses 150 s while it waits.
  auto run = engine.start_workflow<RetryWorkflow>(
      "horizon",
      PolicyInput{.fail_times = 9, .max_attempts = 3, .base_ms = 60000, .horizon_ms = 180000, .timeout_ms = 1000});
  REQUIRE(wait_until([&] { return db.count("SELECT count(*) FROM {s}.attempts") == 1; }));
  testing::advance_clock(db.url(), db.schema(), 150s);  // attempt 2 runs at +150 s: a retry would start at +210 s
  auto result = run.result(10s);
  CHECK(result["attempts"] == 2);
  CHECK_THAT(result["message"].get<std::string>(), Catch::Contains("past max_retry_horizon of 180000 ms"));
}

namespace {
// Takes the lease of the run's running first attempt away, as if its worker had frozen; `also`
// is more SQL for the SET clause. Returns when the lease ran out, by the database clock (us).
std::int64_t take_lease_away(TestDb& db, const std::string& id, const std::string& also = "") {
  const std::string where = " WHERE workflow_id = '" + id + "' AND status = 'running' AND attempt = 1";
  REQUIRE(wait_until([&] { return db.count("SELECT count(*) FROM {s}.tasks" + where) == 1; }));
  return db
      .query("UPDATE {s}.tasks SET lease_until = {s}.db_now() - interval '1 ms'" + also + where +
             " RETURNING {s}.epoch_us(lease_until)")[0][0]
      .as<std::int64_t>();
}
}  // namespace

TEST_CASE_METHOD(RetryEngine, "a lost lease is a failed attempt: the next one waits the policy's delay after it",
                 "[pg][retry][lease]") {
  const std::string id = "lost-lease-delay";
  auto run = engine.start_workflow<RetryWorkflow>(id, {.max_attempts = 3, .base_ms = 2000, .hang_ms = 3000});
  const std::int64_t lost_us = take_lease_away(db, id);
  CHECK(run.result(30s)["attempt"] == 2);
  const auto second =
      db.query("SELECT {s}.epoch_us(attempt_started_at) FROM {completed} c WHERE workflow_id = '" + id + "'");
  const auto waited_ms = (second[0][0].as<std::int64_t>() - lost_us) / 1000;
  INFO("attempt 2 started " << waited_ms << " ms after the lease of attempt 1 ran out");
  CHECK(waited_ms >= 2000);
  CHECK(db.count("SELECT count(*) FROM {s}.attempts WHERE outcome = 'lease_expired'") == 1);
}

TEST_CASE_METHOD(RetryEngine, "a lost lease is not retried when the next attempt would start past the horizon",
                 "[pg][retry][lease]") {
  const std::string id = "lost-lease-horizon";
  // The horizon covers two on-time attempts and the delay; the lost attempt took far longer.
  auto run = engine.start_workflow<RetryWorkflow>(
      id, {.max_attempts = 2, .base_ms = 1000, .horizon_ms = 5000, .timeout_ms = 2000, .hang_ms = 3000});
  take_lease_away(db, id, ", first_started_at = {s}.db_now() - interval '10 s'");
  const auto result = run.result(30s);
  CHECK(result["failed"] == "durable::LeaseExpired");
  CHECK_THAT(result["message"].get<std::string>(), Catch::Contains("past max_retry_horizon of 5000 ms"));
  CHECK(result["attempts"] == 1);  // the one that ran and lost its lease
}

TEST_CASE("a retry whose answer was lost is counted once and runs its next attempt", "[pg][retry][faults]") {
  // The statement that schedules the retry commits, and its answer is dropped: the write is
  // tried again, finds its own retry, and must not take it for a lost lease.
  detail::configure_failpoints("lost_answer.retry_task=fail@1");
  struct Reset {
    ~Reset() { detail::configure_failpoints(""); }
  } reset;
  RetryEngine env;
  auto result = env.run_skipping_time({.fail_times = 1, .max_attempts = 3, .base_ms = 100}, "lost-answer");
  CHECK(result["attempt"] == 2);
  const auto m = settled_metrics(env.engine, 1);
  CHECK(m.retries == 1);
  CHECK(env.db.count("SELECT count(*) FROM {s}.attempts WHERE outcome = 'failed' AND retry_at IS NOT NULL") == 1);
}

TEST_CASE_METHOD(RetryEngine, "invalid call-site policies fail the run with their own message and write no task",
                 "[pg][retry][bad-input]") {
  const std::vector<std::pair<PolicyInput, std::string>> cases{
      {{.max_attempts = 0}, "retry.max_attempts = 0 is invalid: it must be > 0"},
      {{.base_ms = -1}, "retry.base = -1ms is invalid: it must be >= 0"},
      {{.max_backoff_ms = -5}, "retry.max_backoff = -5ms is invalid: it must be >= 0"},
      {{.timeout_ms = 0}, "timeout = 0ms is invalid: it must be > 0 and <= 24h"},
      {{.timeout_ms = 25L * 3600 * 1000}, "timeout = 90000000ms is invalid"},
      {{.max_attempts = 3, .horizon_ms = 1000, .timeout_ms = 1000}, "retry.max_retry_horizon = 1000ms is invalid"},
      {{.jitter = 2}, "retry.jitter = 2 is invalid: it must be between 0 and 1"},
  };
  int n = 0;
  for (const auto& [input, message] : cases) {
    const std::string id = "invalid-" + std::to_string(n++);
    auto run = engine.start_workflow<RetryWorkflow>(id, input);
    try {
      run.result(10s);
      FAIL("the run should have failed: " << message);
    } catch (const WorkflowFailed& e) {
      CHECK(e.error_type() == "durable::InvalidOptions");
      CHECK_THAT(e.what(), Catch::Contains(message));
    }
    CHECK(db.count("SELECT count(*) FROM {s}.tasks WHERE workflow_id = '" + id + "'") == 0);
  }
}

TEST_CASE_METHOD(RetryEngine, "options resolve call site first, then the activity's own, then the defaults",
                 "[pg][retry]") {
  engine.start_workflow<ResolutionWorkflow>("resolve", 0).result(10s);
  auto options = db.query(
      "SELECT coalesce(data->'options'->>'max_attempts', '1'), "
      "coalesce(data->'options'->>'timeout_ms', '30000') "
      "FROM {journal} jw WHERE workflow_id = 'resolve' AND kind = 'activity_scheduled' ORDER BY "
      "step");  // defaults left out
  REQUIRE(options.size() == 4);
  CHECK(options[0][0].as<int>() == 3);  // declared
  CHECK(options[0][1].as<int>() == 7000);
  CHECK(options[1][0].as<int>() == 5);  // call-site retry, declared timeout
  CHECK(options[1][1].as<int>() == 7000);
  CHECK(options[2][0].as<int>() == 3);  // declared retry, call-site timeout
  CHECK(options[2][1].as<int>() == 2000);
  CHECK(options[3][0].as<int>() == 1);  // defaults
  CHECK(options[3][1].as<int>() == 30000);
}

TEST_CASE_METHOD(RetryEngine, "an attempt past its timeout is failed and retried, and its late result is discarded",
                 "[pg][retry][timeout]") {
  auto run = engine.start_workflow(overrun_workflow, "overrun", 1500);
  // While attempt 1 overruns, its slot is reported stuck.
  CHECK(wait_until([&] { return engine.metrics().stuck_slots == 1; }));
  CHECK(run.result(10s) == 1);  // attempt 2's "on time", not attempt 1's "late"
  CHECK(db.count("SELECT count(*) FROM {s}.attempts WHERE error_type = 'durable::ActivityTimeout' "
                 "AND error_message = 'attempt 1 ran past its timeout of 200 ms'") == 1);
  CHECK(db.count("SELECT count(*) FROM {journal} jw WHERE workflow_id = 'overrun' AND kind = 'activity_completed'") ==
        1);
  // Once the overrunning body returns, its slot is free again and its outcome went nowhere.
  CHECK(wait_until([&] { return engine.metrics().stuck_slots == 0; }));
  CHECK(db.count("SELECT count(*) FROM {completed} c WHERE workflow_id = 'overrun' AND result = '\"on time\"'") == 1);
}

TEST_CASE_METHOD(ShortLeaseEngine, "heartbeats keep an activity alive past its timeout and lease",
                 "[pg][retry][heartbeat]") {
  // 2.5 s of work with a 1 s timeout and a 1 s + 200 ms lease.
  auto run = engine.start_workflow(heartbeat_workflow, "beating", 2500);
  CHECK(run.result(20s) >= 20);
  CHECK(db.count("SELECT count(*) FROM {s}.attempts WHERE outcome <> 'completed'") == 0);
  CHECK(db.count("SELECT attempt FROM {completed} c WHERE workflow_id = 'beating'") == 1);  // the result counts beats
}

TEST_CASE_METHOD(RetryEngine, "the next attempt reads the last heartbeat details", "[pg][retry][heartbeat]") {
  auto run = engine.start_workflow(resuming_workflow, "resume", 0);
  CHECK(run.result(10s) == nlohmann::json{{"done_items", 42}});
}

TEST_CASE_METHOD(RetryEngine, "oversized heartbeat details are a clear error", "[pg][retry][heartbeat]") {
  auto result = engine.start_workflow(oversized_workflow, "oversized", 0).result(10s);
  CHECK(result["type"] == "durable::InvalidArgument");
  CHECK_THAT(result["message"].get<std::string>(), Catch::Contains("the limit is 16384 bytes"));
}

TEST_CASE_METHOD(RetryEngine, "a heartbeat tells the activity its workflow was cancelled", "[pg][retry][heartbeat]") {
  saw_cancellation = false;
  auto run = engine.start_workflow(cancellable_workflow, "cancel-me", 0);
  REQUIRE(wait_until([&] { return db.count("SELECT count(*) FROM {s}.tasks WHERE status = 'running'") == 1; }));
  run.cancel();
  CHECK(wait_until([&] { return saw_cancellation.load(); }));
}

TEST_CASE_METHOD(RetryEngine, "a heartbeat after its lease was lost returns false and extends nothing",
                 "[pg][retry][heartbeat][fencing]") {
  heartbeat_refused = false;
  refused_heartbeat_moved_deadline = true;
  auto run = engine.start_workflow(fenced_heartbeat_workflow, "fenced-beat", 0);
  const std::string where = " WHERE workflow_id = 'fenced-beat' AND status = 'running'";
  REQUIRE(wait_until(
      [&] { return db.count("SELECT count(*) FROM {s}.tasks" + where + " AND heartbeat IS NOT NULL") == 1; }));
  // Another worker takes the task over, as after this one froze: a new lease token, its own lease.
  const auto taken = db.query(
      "UPDATE {s}.tasks SET lease_token = lease_token + 1000000, lease_owner = 'other', "
      "lease_until = {s}.db_now() + interval '1 hour'" +
      where + " RETURNING lease_until::text, heartbeat::text")[0];
  REQUIRE(wait_until([&] { return heartbeat_refused.load(); }));
  CHECK_FALSE(refused_heartbeat_moved_deadline);
  const auto after = db.query("SELECT lease_until::text, heartbeat::text, lease_owner FROM {s}.tasks" + where);
  REQUIRE(after.size() == 1);
  CHECK(after[0][0].as<std::string>() == taken[0].as<std::string>());  // the other lease is not extended
  CHECK(after[0][1].as<std::string>() == taken[1].as<std::string>());  // nor its details replaced
  CHECK(after[0][2].as<std::string>() == "other");
  // The body's outcome, once it went through, is fenced off too: nothing journaled for the step.
  CHECK(wait_until([&] { return engine.metrics().activity_in_flight == 0; }));
  CHECK(
      db.count("SELECT count(*) FROM {journal} jw WHERE workflow_id = 'fenced-beat' AND kind = 'activity_completed'") ==
      0);
  CHECK(run.status() == WorkflowStatus::running);
}
