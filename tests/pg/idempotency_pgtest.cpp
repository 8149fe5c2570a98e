#include <fmt/format.h>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "support/expect.hpp"
#include "support/process.hpp"
#include "support/test_db.hpp"
#include "support/test_workflows.hpp"

using namespace durable;
using namespace durable::test;

TEST_CASE_METHOD(RunningEngine, "start_or_find answers a taken id with the existing run", "[pg][idempotency]") {
  auto first = engine.start_or_find<HelloWorkflow>("greet-1", "ada");
  auto again = engine.start_or_find<HelloWorkflow>("greet-1", "bob");
  CHECK(first.started);
  CHECK_FALSE(again.started);
  CHECK(again.run.run_id() == first.run.run_id());
  CHECK(again.run.result(30s) == "hello, ada");  // the first input won
  CHECK(db.count("SELECT count(*) FROM {s}.workflows WHERE workflow_id = 'greet-1'") == 1);
}

TEST_CASE_METHOD(RunningEngine, "id reuse policies decide whether an ended run's id may start again",
                 "[pg][idempotency]") {
  auto first = engine.start_workflow<HelloWorkflow>("done", "x");
  CHECK(first.result(30s) == "hello, x");
  CHECK_THROWS_AS(engine.start_workflow<HelloWorkflow>("done", "x"), WorkflowAlreadyStarted);
  CHECK_THROWS_AS(engine.start_workflow<HelloWorkflow>("done", "x", {.id_reuse = IdReusePolicy::allow_if_failed}),
                  WorkflowAlreadyStarted);  // it completed
  auto second = engine.start_workflow<HelloWorkflow>("done", "y", {.id_reuse = IdReusePolicy::allow_if_ended});
  CHECK(second.result(30s) == "hello, y");
  // Each handle belongs to its run: the first one still reads its own result and status.
  CHECK(first.result(30s) == "hello, x");
  CHECK(first.status() == WorkflowStatus::completed);
  CHECK(engine.workflow<HelloWorkflow>("done").run_id() == second.run_id());  // the id's latest run
  CHECK(engine.workflow_run<HelloWorkflow>(first.run_id()).result(1s) == "hello, x");
  CHECK(engine.workflow_run(second.run_id()).id() == "done");

  auto failed = engine.start_workflow<FailingWorkflow>("broken", "x");
  CHECK_THROWS_AS(failed.result(30s), WorkflowFailed);
  auto retried = engine.start_workflow<HelloWorkflow>("broken", "z", {.id_reuse = IdReusePolicy::allow_if_failed});
  CHECK(retried.result(30s) == "hello, z");
  CHECK_THROWS_AS(failed.result(1s), WorkflowFailed);  // still its own run's outcome
  // A replaced run keeps its whole history, under its own run id.
  CHECK(db.count("SELECT count(*) FROM {journal} jw WHERE workflow_id IN ('done', 'broken') AND kind = "
                 "'workflow_started'") == 4);
  CHECK(db.count("SELECT count(DISTINCT run_id) FROM {journal} jw WHERE workflow_id = 'done' AND kind = "
                 "'workflow_completed'") == 2);
  CHECK(db.count("SELECT count(*) FROM {completed} c WHERE workflow_id = 'done'") == 2);
  CHECK(db.count("SELECT count(*) FROM {completed} c WHERE run_id = '" + first.run_id().str() + "'") == 1);

  auto running = engine.start_workflow<SleepWorkflow>("napping", 3600 * 1000);
  CHECK_THROWS_AS(engine.start_workflow<SleepWorkflow>("napping", 1, {.id_reuse = IdReusePolicy::allow_if_ended}),
                  WorkflowAlreadyStarted);  // a running run is never replaced
  // Every run is kept, with its final status; one of each id is the latest.
  CHECK(db.count("SELECT count(*) FROM {s}.workflows WHERE workflow_id = 'done' AND status = 'completed'") == 2);
  CHECK(db.count("SELECT count(*) FROM {s}.workflows WHERE workflow_id = 'broken' AND status = 'failed'") == 1);
  CHECK(db.count("SELECT count(*) FROM {s}.workflows WHERE workflow_id = 'broken' AND status = 'completed'") == 1);
  CHECK(db.count("SELECT count(*) FROM {s}.workflows WHERE ended_at IS NULL") == 1);  // the nap
  CHECK(db.count("SELECT count(*) FROM {s}.workflows WHERE latest") == 3);
  CHECK_FALSE(failed.cancel());  // an old handle's cancel acts on its ended run, not on the new one
  CHECK(retried.status() == WorkflowStatus::completed);
  running.cancel();
  CHECK(wait_until([&] {
    return db.count("SELECT count(*) FROM {s}.workflows WHERE workflow_id = 'napping' AND status = 'cancelled'") == 1;
  }));
}

TEST_CASE_METHOD(RunningEngine, "a run id that names no run is WorkflowNotFound", "[pg][idempotency]") {
  expect_throw<WorkflowNotFound>([&] { engine.workflow_run(RunId{"not-a-uuid"}); }, "no run with run id 'not-a-uuid'");
  expect_throw<WorkflowNotFound>([&] { engine.workflow_run(RunId{"00000000-0000-0000-0000-000000000000"}); },
                                 "deleted and pruned runs are gone");
  expect_throw<WorkflowNotFound>([&] { engine.workflow_run(RunId{""}); }, "no run with run id ''");
}

namespace {
struct SignupEngine : RunningEngine {
  SignupEngine()
      : RunningEngine({}, [](Engine& e) {
          e.add_trigger<HelloWorkflow>("signup");
          CHECK_THROWS_AS(e.add_trigger<HelloWorkflow>("signup"), RegistrationError);
          CHECK_THROWS_AS(e.add_trigger<HelloWorkflow>("bad:name"), RegistrationError);
        }) {}
};
}  // namespace

TEST_CASE_METHOD(SignupEngine, "a redelivered event starts nothing new", "[pg][idempotency][triggers]") {
  auto first = engine.deliver("signup", Event{"evt-17", "grace"});
  auto redelivered = engine.deliver("signup", Json{{"event_id", "evt-17"}, {"payload", "grace"}});
  CHECK(first.started);
  CHECK_FALSE(redelivered.started);
  CHECK(first.run.id() == "signup:evt-17");
  CHECK(redelivered.run.run_id() == first.run.run_id());
  CHECK(first.run.result(30s) == "hello, grace");
  CHECK(db.count("SELECT count(*) FROM {s}.workflows") == 1);
  CHECK(db.count("SELECT count(*) FROM {s}.workflows WHERE started_by = 'trigger' AND origin = 'signup'") == 1);
}

TEST_CASE_METHOD(SignupEngine, "an event without a stable id is rejected at the door", "[pg][idempotency][triggers]") {
  expect_throw<InvalidEvent>([&] { engine.deliver("signup", Event{"", "x"}); }, "has no id");
  expect_throw<InvalidEvent>([&] { engine.deliver("signup", Json{{"payload", "x"}}); }, "event_id");
  expect_throw<UnknownTrigger>([&] { engine.deliver("nope", Event{"e1", "x"}); }, "no trigger named 'nope'");
  expect_throw<PayloadError>([&] { engine.deliver("signup", Event{"e2", 42}); }, "the input of workflow 'hello'");
  CHECK(db.count("SELECT count(*) FROM {s}.workflows") == 0);
}

TEST_CASE("100 concurrent starts of one id from 4 processes make exactly one run", "[pg][idempotency][race]") {
  TestDb db;
  {
    Engine migrate(db.options());
    CHECK_THROWS_AS(migrate.workflow("none"), WorkflowNotFound);  // the schema exists before the race
  }
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("durable-race-" + db.schema());
  std::filesystem::create_directories(dir);
  std::vector<pid_t> racers;
  for (int i = 0; i < 4; ++i) {
    racers.push_back(
        spawn_worker(db.url(), {db.schema(), "race", "contested", "25", (dir / std::to_string(i)).string()}));
  }
  int started = 0, duplicates = 0;
  for (int i = 0; i < 4; ++i) {
    REQUIRE(wait_for(racers[static_cast<std::size_t>(i)]) == 0);
    int s = 0, d = 0;
    std::ifstream(dir / std::to_string(i)) >> s >> d;
    started += s;
    duplicates += d;
  }
  CHECK(started == 1);
  CHECK(duplicates == 99);
  CHECK(db.count("SELECT count(*) FROM {s}.workflows") == 1);
  CHECK(db.count("SELECT count(*) FROM {s}.journal_events") == 1);
  std::filesystem::remove_all(dir);
}

namespace {

std::atomic<int> charge_runs{0};
std::atomic<bool> fail_next_charge{false};
std::atomic<int> charge_ms{50};  // long enough for concurrent attempts to meet
std::atomic<std::chrono::steady_clock::rep> charge_ended{0};

struct ChargeInput {
  std::string order{};
  int cents = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(ChargeInput, order, cents)

// Keyed by its input: one charge per order, however many workflows ask.
struct KeyedCharge {
  static constexpr auto name = "keyed_charge";
  static std::optional<std::string> idempotency_key(const ChargeInput& in) { return "charge:" + in.order; }
  std::string operator()(ActivityContext&, const ChargeInput& in) const {
    ++charge_runs;
    std::this_thread::sleep_for(std::chrono::milliseconds{charge_ms.load()});
    charge_ended = std::chrono::steady_clock::now().time_since_epoch().count();
    if (fail_next_charge.exchange(false)) throw std::runtime_error("card network down");
    return "receipt-" + in.order + "-" + std::to_string(charge_runs.load());
  }
};

// A call-site key travels as hex: keys are bytes, workflow inputs are JSON.
struct PayInput {
  ChargeInput charge{};
  bool use_key = false;
  std::string key_hex{};
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(PayInput, charge, use_key, key_hex)

std::string hex(const std::string& bytes) {
  std::string out;
  for (unsigned char c : bytes) out += fmt::format("{:02x}", c);
  return out;
}
std::string unhex(const std::string& hex) {
  std::string out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
    out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  return out;
}
PayInput with_key(ChargeInput charge, const std::string& key) { return {std::move(charge), true, hex(key)}; }

struct PayWorkflow {
  static constexpr auto name = "pay";
  nlohmann::json operator()(WorkflowContext& ctx, const PayInput& in) {
    try {
      std::optional<std::string> key;
      if (in.use_key) key = unhex(in.key_hex);
      return {{"receipt", ctx.call<KeyedCharge>(in.charge, {.idempotency_key = key})}};
    } catch (const ActivityFailed& e) {
      return {{"failed", e.error_type()}};
    }
  }
};

struct KeyedEngine {
  explicit KeyedEngine(bool mismatch_fails = false, Duration poll = 200ms) : engine(options(db, mismatch_fails, poll)) {
    charge_runs = 0;
    fail_next_charge = false;
    charge_ms = 50;
    engine.add<KeyedCharge>().add<PayWorkflow>();
    engine.start();
  }
  static EngineOptions options(const TestDb& db, bool mismatch_fails, Duration poll) {
    EngineOptions o = db.options();
    o.idempotency_input_mismatch_fails = mismatch_fails;
    o.poll_interval = poll;
    return o;
  }
  nlohmann::json pay(const std::string& id, const PayInput& in) {
    return engine.start_workflow<PayWorkflow>(id, in).result(60s);
  }
  TestDb db;
  Engine engine;
};

struct StrictKeyedEngine : KeyedEngine {
  StrictKeyedEngine() : KeyedEngine(true) {}
};

// Polls as seldom as the default: only a wake-up can make waiters quick.
struct DefaultPollKeyedEngine : KeyedEngine {
  DefaultPollKeyedEngine() : KeyedEngine(false, EngineOptions{}.poll_interval) {}
};

}  // namespace

TEST_CASE_METHOD(KeyedEngine, "a committed result is reused for the same activity and key across workflows",
                 "[pg][idempotency][keys]") {
  auto first = pay("pay-1", {{"o-1", 500}});
  auto second = pay("pay-2", {{"o-1", 500}});
  CHECK(first["receipt"] == "receipt-o-1-1");
  CHECK(second == first);
  CHECK(charge_runs == 1);
  CHECK(db.count("SELECT count(*) FROM {s}.idempotent_results") == 1);
  // A call-site key wins over the activity's own: another key, another charge.
  auto third = pay("pay-3", with_key({"o-1", 500}, "manual-retry-1"));
  CHECK(third["receipt"] == "receipt-o-1-2");
  CHECK(charge_runs == 2);
}

TEST_CASE_METHOD(KeyedEngine, "a pruned run's committed key result is still reused by a later run with the key",
                 "[pg][idempotency][keys][prune]") {
  const auto first = pay("pay-pruned", {{"o-9", 700}});
  CHECK(first["receipt"] == "receipt-o-9-1");
  const OperatorAction action{"ops@example", "the test prunes every ended run"};
  REQUIRE(engine.runs().prune(std::chrono::system_clock::now() + 1h, action).runs == 1);
  REQUIRE(db.count("SELECT count(*) FROM {s}.workflows") == 0);
  CHECK(db.count("SELECT count(*) FROM {s}.idempotent_results") == 1);  // Runs::prune: the results stay
  CHECK(pay("pay-after-prune", {{"o-9", 700}}) == first);
  CHECK(charge_runs == 1);  // the body did not run again
  // Expiring them is what makes the key run its body again.
  CHECK(engine.runs().expire_idempotency_results(std::chrono::system_clock::now() + 1h, action) == 1);
  CHECK(pay("pay-after-expiry", {{"o-9", 700}})["receipt"] == "receipt-o-9-2");
  CHECK(charge_runs == 2);
}

TEST_CASE_METHOD(KeyedEngine, "keys are bytes: NUL and invalid UTF-8 round-trip", "[pg][idempotency][keys]") {
  const std::string key("k\0\xff\xfe", 4);
  auto first = pay("bytes-1", with_key({"o-2", 1}, key));
  auto second = pay("bytes-2", with_key({"o-2", 1}, key));
  CHECK(second == first);
  CHECK(charge_runs == 1);
  CHECK(db.query("SELECT encode(key, 'hex') FROM {s}.idempotent_results")[0][0].as<std::string>() == "6b00fffe");
}

TEST_CASE_METHOD(KeyedEngine, "an empty or oversized key fails the run before any task is written",
                 "[pg][idempotency][keys][bad-input]") {
  for (const auto& [id, key, message] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"empty-key", "", "activity 'keyed_charge': the idempotency key is empty"},
           {"long-key", std::string(max_idempotency_key_bytes + 1, 'k'), "is 513 bytes; the limit is 512 bytes"}}) {
    auto run = engine.start_workflow<PayWorkflow>(id, with_key({"o-3", 1}, key));
    try {
      run.result(30s);
      FAIL("the run should have failed");
    } catch (const WorkflowFailed& e) {
      CHECK(e.error_type() == "durable::InvalidIdempotencyKey");
      CHECK_THAT(e.what(), Catch::Contains(message));
    }
    CHECK(db.count("SELECT count(*) FROM {s}.tasks WHERE workflow_id = '" + id + "'") == 0);
  }
}

TEST_CASE_METHOD(KeyedEngine, "failures are never reused", "[pg][idempotency][keys]") {
  fail_next_charge = true;
  CHECK(pay("fails", {{"o-4", 1}})["failed"] == "std::runtime_error");
  CHECK(pay("succeeds", {{"o-4", 1}})["receipt"] == "receipt-o-4-2");
  CHECK(charge_runs == 2);
}

TEST_CASE_METHOD(KeyedEngine, "50 workflows started at once with one key run the body once and all get its result",
                 "[pg][idempotency][keys]") {
  std::vector<WorkflowHandle<nlohmann::json>> runs;
  for (int i = 0; i < 50; ++i) {
    runs.push_back(engine.start_workflow<PayWorkflow>("same-key-" + std::to_string(i), {{"o-5", 9}}));
  }
  for (auto& run : runs) CHECK(run.result(120s)["receipt"] == "receipt-o-5-1");
  CHECK(charge_runs == 1);
}

TEST_CASE_METHOD(KeyedEngine, "a key reused with another input warns and reuses by default",
                 "[pg][idempotency][keys]") {
  pay("input-a", with_key({"o-6", 100}, "k-6"));
  CHECK(engine.metrics().idempotency_input_mismatches == 0);
  CHECK(pay("input-b", with_key({"o-6", 999}, "k-6"))["receipt"] == "receipt-o-6-1");
  CHECK(charge_runs == 1);
  CHECK(engine.metrics().idempotency_input_mismatches == 1);
}

TEST_CASE_METHOD(StrictKeyedEngine, "a key reused with another input fails when the engine is strict",
                 "[pg][idempotency][keys]") {
  pay("strict-a", with_key({"o-7", 100}, "k-7"));
  CHECK(pay("strict-b", with_key({"o-7", 999}, "k-7"))["failed"] == "durable::IdempotencyKeyConflict");
  CHECK(charge_runs == 1);
}

TEST_CASE_METHOD(
    DefaultPollKeyedEngine,
    "tasks waiting on a key wake when its holder commits: 20 runs get the result within 1 s of the body's end",
    "[pg][idempotency][keys][wake]") {
  charge_ms = 300;
  std::vector<WorkflowHandle<nlohmann::json>> runs;
  for (int i = 0; i < 20; ++i) {
    runs.push_back(engine.start_workflow<PayWorkflow>("key-wake-" + std::to_string(i), {{"o-8", 9}}));
  }
  for (auto& run : runs) CHECK(run.result(60s)["receipt"] == "receipt-o-8-1");
  const auto ended = std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration{charge_ended.load()});
  const auto after_body = std::chrono::steady_clock::now() - ended;
  INFO("the last result came " << std::chrono::duration_cast<std::chrono::milliseconds>(after_body).count()
                               << " ms after the body ended");
  CHECK(after_body < 1s);
  CHECK(charge_runs == 1);
}
