// Idempotency-key locks where they meet timeouts, retries, shutdown, cancellation and a run's end:
// at most one body per (activity, key) runs at any instant, and a waiter runs within a second of
// the holder's body letting go, however it lets go.
#include <catch2/catch.hpp>

#include <mutex>

#include "support/test_db.hpp"
#include "support/test_workflows.hpp"

using namespace durable;
using namespace durable::test;

namespace {

using Clock = std::chrono::steady_clock;

// What the bodies below did, shared with the test thread.
struct Bodies {
  std::mutex mutex;
  int running = 0, most_running = 0, runs = 0;
  std::vector<Clock::time_point> starts, ends;
  std::atomic<bool> released{false};  // lets a body that waits for it return

  void reset() {
    std::lock_guard lock(mutex);
    running = most_running = runs = 0;
    starts.clear();
    ends.clear();
    released = false;
  }
  int begin() {
    std::lock_guard lock(mutex);
    most_running = std::max(most_running, ++running);
    starts.push_back(Clock::now());
    return ++runs;
  }
  void end() {
    std::lock_guard lock(mutex);
    --running;
    ends.push_back(Clock::now());
  }
  int count() {
    std::lock_guard lock(mutex);
    return runs;
  }
  int most() {
    std::lock_guard lock(mutex);
    return most_running;
  }
  // From the end of body `ended` to the start of body `started` (both 0-based, in order).
  std::chrono::milliseconds gap(std::size_t ended, std::size_t started) {
    std::lock_guard lock(mutex);
    REQUIRE(ends.size() > ended);
    REQUIRE(starts.size() > started);
    return std::chrono::duration_cast<std::chrono::milliseconds>(starts[started] - ends[ended]);
  }
};
Bodies bodies;

struct HeldInput {
  std::string key{};
  // How the first body behaves: "stuck" runs `ms` ignoring its timeout and cancel;
  // "fails_when_released" runs until the test releases it, then fails; "until_cancelled" runs
  // until cancelled() turns true. Later bodies return at once.
  std::string first{};
  int ms = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(HeldInput, key, first, ms)

struct HeldActivity {
  static constexpr auto name = "held";
  static ActivityOptions options() {
    return {.retry = RetryPolicy{.max_attempts = 3, .backoff = Backoff::constant, .base = std::chrono::seconds{20}},
            .timeout = std::chrono::seconds{30}};
  }
  static std::optional<std::string> idempotency_key(const HeldInput& in) { return in.key; }
  std::string operator()(ActivityContext& ctx, const HeldInput& in) const {
    const int run = bodies.begin();
    struct Ended {
      ~Ended() { bodies.end(); }
    } ended;
    if (run > 1) return "body " + std::to_string(run);
    if (in.first == "stuck") std::this_thread::sleep_for(std::chrono::milliseconds{in.ms});
    if (in.first == "fails_when_released") {
      while (!bodies.released) std::this_thread::sleep_for(std::chrono::milliseconds{5});
      throw std::runtime_error("the first body fails");
    }
    if (in.first == "until_cancelled") {
      while (!ctx.cancelled()) std::this_thread::sleep_for(std::chrono::milliseconds{5});
      throw std::runtime_error("cancelled");
    }
    return "body 1";
  }
};

// Calls the held activity, with a short timeout when asked (and retries at once after it).
struct HeldCall {
  HeldInput input{};
  int timeout_ms = 0;  // 0: the activity's own options
  bool await = true;   // false: start it and end the run at once, once `released` is set
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(HeldCall, input, timeout_ms, await)

struct CallsHeld {
  static constexpr auto name = "calls_held";
  std::string operator()(WorkflowContext& ctx, const HeldCall& call) {
    ActivityOptions options;
    if (call.timeout_ms > 0) {
      options.timeout = std::chrono::milliseconds{call.timeout_ms};
      options.retry = RetryPolicy{.max_attempts = 3, .backoff = Backoff::constant, .base = Duration{0}};
    }
    if (call.await) return ctx.call<HeldActivity>(call.input, options);
    (void)ctx.start<HeldActivity>(call.input, options);
    ctx.sleep(std::chrono::milliseconds{300});  // the body starts, then the run ends without it
    return "ended without awaiting";
  }
};

EngineOptions key_options(const TestDb& db) {
  EngineOptions o = db.options();
  o.poll_interval = EngineOptions{}.poll_interval;  // only a wake-up can make a waiter quick
  return o;
}

void add_held(Engine& engine) { engine.add<HeldActivity>().add<CallsHeld>(); }

bool body_running() {
  std::lock_guard lock(bodies.mutex);
  return bodies.running > 0;
}

// The second workflow's task has found the key held and waits for it.
bool waiting_on_key(const TestDb& db) {
  return db.count("SELECT count(*) FROM {s}.idempotency_locks WHERE waiting") == 1;
}

// A started engine with the held activity, on a fresh schema, polling as seldom as the default.
struct HeldEngine {
  HeldEngine() : engine(key_options(db)) {
    bodies.reset();
    add_held(engine);
    engine.start();
  }
  // Starts `holder` and waits for its body, then `waiter` (on its key) and waits until it waits.
  std::pair<WorkflowHandle<std::string>, WorkflowHandle<std::string>> holder_and_waiter(const std::string& holder,
                                                                                        const HeldCall& holding,
                                                                                        const std::string& waiter) {
    auto first = engine.start_workflow<CallsHeld>(holder, holding);
    REQUIRE(wait_until(body_running));
    auto second = engine.start_workflow<CallsHeld>(waiter, {{holding.input.key, "", 0}});
    REQUIRE(wait_until([&] { return waiting_on_key(db); }));
    return {first, second};
  }
  TestDb db;
  Engine engine;
};

}  // namespace

TEST_CASE_METHOD(HeldEngine,
                 "a body that ignores its timeout keeps its key: its retry and another run wait until it has returned",
                 "[pg][idempotency][keys][timeout]") {
  // The first body runs 3 s past a 1 s timeout; the attempt fails at 1 s and is retried at once.
  auto first = engine.start_workflow<CallsHeld>("stuck-1", {{"k-stuck", "stuck", 3000}, 1000});
  REQUIRE(wait_until(body_running));
  auto second = engine.start_workflow<CallsHeld>("stuck-2", {{"k-stuck", "", 0}, 1000});
  const std::string a = first.result(30s), b = second.result(30s);
  CHECK(bodies.most() == 1);   // never two bodies of one key at once
  CHECK(bodies.count() == 2);  // the stuck one, then the retry, whose result the other run reuses
  CHECK(a == "body 2");
  CHECK(b == "body 2");
  CHECK(bodies.gap(0, 1) < 1s);  // the retry ran as soon as the stuck body returned
}

TEST_CASE_METHOD(HeldEngine, "a run waiting on a key runs within a second of the holder's retry letting go",
                 "[pg][idempotency][keys][wake]") {
  auto [holder, waiter] = holder_and_waiter("retry-holder", {{"k-retry", "fails_when_released", 0}}, "retry-waiter");
  // The holder fails (its retry is 20 s away) and lets go: the waiter runs the body now.
  bodies.released = true;
  CHECK(waiter.result(10s) == "body 2");
  CHECK(bodies.gap(0, 1) < 1s);
  CHECK(bodies.most() == 1);
  engine.runs().cancel(holder.run_id(), {.actor = "test", .reason = "done"});
}

TEST_CASE_METHOD(HeldEngine, "a run waiting on a key runs within a second of the holder's run being cancelled",
                 "[pg][idempotency][keys][wake][cancel]") {
  auto [holder, waiter] = holder_and_waiter("cancel-holder", {{"k-cancel", "until_cancelled", 0}}, "cancel-waiter");
  CHECK(holder.cancel("the holder is no longer wanted"));
  CHECK(waiter.result(10s) == "body 2");
  CHECK(bodies.gap(0, 1) < 1s);
  CHECK(bodies.most() == 1);
}

TEST_CASE_METHOD(HeldEngine,
                 "a run waiting on a key runs within a second of the holder's run ending without awaiting it",
                 "[pg][idempotency][keys][wake][unawaited]") {
  HeldCall leaves{{"k-end", "until_cancelled", 0}};
  leaves.await = false;
  auto [holder, waiter] = holder_and_waiter("end-holder", leaves, "end-waiter");
  CHECK(holder.result(10s) == "ended without awaiting");
  CHECK(waiter.result(10s) == "body 2");
  CHECK(bodies.gap(0, 1) < 1s);
  CHECK(bodies.most() == 1);
}

TEST_CASE("a run waiting on a key runs within a second of the holder's engine handing it back at shutdown",
          "[pg][idempotency][keys][wake][shutdown]") {
  bodies.reset();
  TestDb db;
  EngineOptions stopping = key_options(db);
  stopping.shutdown_grace = std::chrono::milliseconds{300};
  stopping.instance = "stopping";
  Engine first(stopping);
  add_held(first);
  first.start();
  // Runs 2 s, past the first engine's grace: handed back while its body still runs.
  auto holder = first.start_workflow<CallsHeld>("shutdown-holder", {{"k-shutdown", "stuck", 2000}});
  REQUIRE(wait_until(body_running));
  EngineOptions staying = key_options(db);
  staying.instance = "staying";
  Engine second(staying);
  add_held(second);
  second.start();
  auto waiter = second.start_workflow<CallsHeld>("shutdown-waiter", {{"k-shutdown", "", 0}});
  REQUIRE(wait_until([&] { return waiting_on_key(db); }));
  first.stop();  // returns once the stuck body has
  CHECK(waiter.result(10s) == "body 2");
  CHECK(holder.result(10s) == "body 2");  // its task ran again on the second engine, or reused the result
  CHECK(bodies.most() == 1);
  CHECK(bodies.gap(0, 1) < 1s);
}

TEST_CASE("a run waiting on a key runs within a poll of the lease end of a holder that died",
          "[pg][idempotency][keys][wake][crash]") {
  bodies.reset();
  TestDb db;  // polls every 200 ms
  Engine engine(db.options());
  add_held(engine);
  engine.start();
  // What an engine that died while its body ran leaves: its task running and the key locked, both
  // until its lease ends, 2 s from now. (Its last attempt: claimed again, it fails without a body.)
  db.query(R"(
INSERT INTO {s}.workflows (workflow_id, run_id, name, status, input, next_seq, runnable)
VALUES ('dead-holder', '018f0000-0000-7000-8000-0000000000d1', 'gone', 'running', '0', 2, false);
INSERT INTO {s}.tasks (run_id, workflow_id, step, name, input, options, idempotency_key, status, attempt, available_at,
                       lease_token, lease_owner, lease_until, attempt_started_at, first_started_at)
VALUES ('018f0000-0000-7000-8000-0000000000d1', 'dead-holder', 0, 'held', '{{"key": "k-dead"}}', '{{}}',
        convert_to('k-dead', 'UTF8'), 'running', 3, now(), 991, 'dead@elsewhere:1', now() + interval '2 seconds',
        now(), now());
INSERT INTO {s}.idempotency_locks (activity, key, task_id, lease_token, run_id, step, held_until)
SELECT 'held', convert_to('k-dead', 'UTF8'), task_id, 991, run_id, step, lease_until FROM {s}.tasks
WHERE workflow_id = 'dead-holder')");
  const auto lease_end = Clock::now() + 2s;
  auto waiter = engine.start_workflow<CallsHeld>("dead-waiter", {{"k-dead", "", 0}});
  CHECK(waiter.result(10s) == "body 1");
  std::lock_guard lock(bodies.mutex);
  REQUIRE(bodies.starts.size() == 1);
  const auto after = std::chrono::duration_cast<std::chrono::milliseconds>(bodies.starts[0] - lease_end);
  INFO("the waiter's body started " << after.count() << " ms after the dead holder's lease ended");
  CHECK(after > -200ms);  // not while the lease was live (the two clocks are read apart: some slack)
  CHECK(after < 1s);
}
