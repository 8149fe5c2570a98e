#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "support/expect.hpp"
#include "support/process.hpp"
#include "support/saga_workflows.hpp"
#include "support/test_db.hpp"
#include "support/test_workflows.hpp"
#include "support/workers.hpp"

using namespace durable;
using namespace durable::test;

namespace {

using Events = std::vector<std::string>;

// The log the saga's bodies write, a file of its own per test, gone at the end.
struct SagaLog {
  std::string path = (std::filesystem::temp_directory_path() /
                      ("durable-saga-" + std::to_string(getpid()) + "-" + std::to_string(std::rand()) + ".log"))
                         .string();
  ~SagaLog() { std::filesystem::remove(path); }
  int lines(const std::string& prefix) const {  // the lines that start with it
    std::ifstream in(path);
    int count = 0;
    for (std::string line; std::getline(in, line);) count += line.rfind(prefix, 0) == 0 ? 1 : 0;
    return count;
  }
};

// The table the undos write their effect to: one row per (workflow, compensation), however often it ran.
void make_undo_table(const TestDb& db) {
  db.query("CREATE TABLE {s}.saga_undone (workflow_id text NOT NULL, n int NOT NULL, PRIMARY KEY (workflow_id, n))");
}

std::vector<int> undone(const TestDb& db, const std::string& workflow_id) {
  std::vector<int> ns;
  for (const auto& row : db.query("SELECT n FROM {s}.saga_undone WHERE workflow_id = '" + workflow_id + "' ORDER BY n"))
    ns.push_back(row[0].as<int>());
  return ns;
}

// What the run's history (the public Runs API) says of its compensations, in journal order:
// "scheduled 2", "completed 2", "failed 2" for undo 2's events, and "cancel" where a cancel was
// seen. An outcome of a call the cancel dropped does not count: "completed 2, dropped" (one can be
// journaled before the cancel, when it committed while the replay that saw the cancel ran).
Events undo_events(Engine& engine, const RunId& run_id) {
  const History history = engine.runs().history(run_id);
  REQUIRE_FALSE(history.next_seq);  // one page: these runs have far fewer than 1,000 events
  std::set<int> dropped;
  for (const auto& e : history.events) {
    if (e.kind == "cancel_delivered") dropped = e.data.at("dropped").get<std::set<int>>();
  }
  std::map<int, int> undo_of_step;
  Events events;
  for (const auto& e : history.events) {
    if (e.kind == "cancel_delivered") events.push_back("cancel");
    if (e.name != "saga_undo") continue;
    if (e.kind == "activity_scheduled") undo_of_step[e.step] = e.data.at("input").at("n").get<int>();
    events.push_back(e.kind.substr(std::string("activity_").size()) + " " + std::to_string(undo_of_step.at(e.step)) +
                     (e.kind != "activity_scheduled" && dropped.count(e.step) ? ", dropped" : ""));
  }
  return events;
}

// A started engine that runs the sagas, with the undos' table.
struct SagaEngine : RunningEngine {
  SagaEngine() : RunningEngine({}, register_sagas) { make_undo_table(db); }
  SagaLog log;
  SagaPlan plan(SagaPlan p = {}) const {
    p.log = log.path;
    p.schema = db.schema();
    return p;
  }

  // Runs the saga with undo 2 waiting until the run is cancelled, which it is then; returns the
  // run's compensation events once it ended cancelled, after checking every step before the failing
  // one was undone and undo 2 ran twice (the dropped one and the one started again).
  Events cancelled_while_undo_2_hangs(const std::string& workflow_id, SagaPlan p) {
    p.hang_undo = 2;
    p.hang = log.path + ".hang";
    std::ofstream(p.hang) << "undo 2 waits while this file exists\n";
    auto run = engine.start_workflow<SagaWorkflow>(workflow_id, plan(p));
    REQUIRE(wait_until([&] { return log.lines("undo 2 attempt 1") == 1; }));
    CHECK(run.cancel("enough"));
    REQUIRE(wait_until([&] {
      const Events events = undo_events(engine, run.run_id());
      return std::count(events.begin(), events.end(), "cancel") == 1;
    }));
    std::filesystem::remove(p.hang);
    expect_throw<WorkflowCancelled>([&] { run.result(30s); }, "enough");
    std::vector<int> all(static_cast<std::size_t>(p.fail_at - 1));
    std::iota(all.begin(), all.end(), 1);
    CHECK(undone(db, workflow_id) == all);
    CHECK(log.lines("undo 2") == 2);
    return undo_events(engine, run.run_id());
  }
};

}  // namespace

TEST_CASE_METHOD(SagaEngine, "a failure at step 3 of 5 runs compensations 2 then 1, each once, and fails the run",
                 "[pg][saga]") {
  auto run = engine.start_workflow<SagaWorkflow>("saga-1", plan());
  const auto failed = expect_throw<WorkflowFailed>([&] { run.result(30s); }, "saga_step", "step 3 refused");
  CHECK(failed.error_type() == "durable::ActivityFailed");  // the step's error, rethrown after compensating
  CHECK(undo_events(engine, run.run_id()) == Events{"scheduled 2", "completed 2", "scheduled 1", "completed 1"});
  CHECK(log.lines("undo 2") == 1);
  CHECK(log.lines("undo 1") == 1);
  CHECK(log.lines("undo 3") == 0);  // step 3 never succeeded: nothing to undo
  CHECK(log.lines("step 4") == 0);
  CHECK(undone(db, "saga-1") == std::vector<int>{1, 2});
}

TEST_CASE_METHOD(SagaEngine, "parallel compensation schedules every compensation before any completes", "[pg][saga]") {
  auto run = engine.start_workflow<SagaWorkflow>("saga-parallel", plan({.fail_at = 4, .parallel = true}));
  CHECK_THROWS_WITH(run.result(30s), Catch::Contains("step 4 refused"));
  const Events events = undo_events(engine, run.run_id());
  REQUIRE(events.size() == 6);
  CHECK(Events(events.begin(), events.begin() + 3) == Events{"scheduled 3", "scheduled 2", "scheduled 1"});
  CHECK(std::set<std::string>(events.begin() + 3, events.end()) ==
        std::set<std::string>{"completed 1", "completed 2", "completed 3"});
  CHECK(undone(db, "saga-parallel") == std::vector<int>{1, 2, 3});
}

TEST_CASE_METHOD(SagaEngine, "a compensation that fails for good does not stop the others, and is named",
                 "[pg][saga]") {
  auto run = engine.start_workflow<SagaWorkflow>("saga-2", plan({.fail_at = 4, .failing_undos = {2}}));
  const auto failed = expect_throw<WorkflowFailed>(
      [&] { run.result(30s); }, "1 of 3 compensations failed for good",
      "activity 'saga_undo' (std::runtime_error: undo 2 refused; after 3 attempts)",
      "compensating for durable::ActivityFailed: activity 'saga_step' failed after 1 attempt: std::runtime_error: "
      "step 4 refused");
  CHECK(failed.error_type() == "durable::CompensationFailed");
  CHECK(undo_events(engine, run.run_id()) ==
        Events{"scheduled 3", "completed 3", "scheduled 2", "failed 2", "scheduled 1", "completed 1"});
  CHECK(log.lines("undo 2 attempt") == 3);  // its own retry policy: 3 attempts
  CHECK(undone(db, "saga-2") == std::vector<int>{1, 3});

  // The same saga catching CompensationFailed: what it lists.
  auto reported = engine.start_workflow<SagaWorkflow>(
      "saga-2-report", plan({.fail_at = 4, .failing_undos = {2, 3}, .parallel = true, .report = true}));
  CHECK(reported.result(30s) ==
        "2 of 3\n"
        "saga_undo | std::runtime_error | undo 3 refused | 3\n"
        "saga_undo | std::runtime_error | undo 2 refused | 3\n"
        "cause: durable::ActivityFailed: activity 'saga_step' failed after 1 attempt: std::runtime_error: step 4 "
        "refused");
  CHECK(undone(db, "saga-2-report") == std::vector<int>{1});
}

TEST_CASE_METHOD(SagaEngine, "a run cancelled during a step compensates the steps before it and ends cancelled",
                 "[pg][saga][cancel]") {
  auto run = engine.start_workflow<SagaWorkflow>("saga-cancel", plan({.fail_at = 0, .stall_at = 3}));
  REQUIRE(wait_until([&] { return log.lines("step 3") == 1; }));
  CHECK(run.cancel("the customer left"));
  expect_throw<WorkflowCancelled>([&] { run.result(30s); }, "the customer left");
  CHECK(run.status() == WorkflowStatus::cancelled);
  CHECK(undo_events(engine, run.run_id()) ==
        Events{"cancel", "scheduled 2", "completed 2", "scheduled 1", "completed 1"});
  CHECK(log.lines("undo") == 2);
  CHECK(undone(db, "saga-cancel") == std::vector<int>{1, 2});
}

TEST_CASE_METHOD(SagaEngine,
                 "a cancel seen while compensating starts the compensation it dropped again, runs the rest, "
                 "then ends the run cancelled",
                 "[pg][saga][cancel]") {
  CHECK(cancelled_while_undo_2_hangs("saga-cancel-undo", {}) ==
        Events{"scheduled 2", "cancel", "scheduled 2", "completed 2", "scheduled 1", "completed 1"});
  CHECK(log.lines("undo 1") == 1);
}

TEST_CASE_METHOD(SagaEngine,
                 "a cancel seen while compensating in parallel starts the compensations it dropped again, each "
                 "completes once",
                 "[pg][saga][cancel]") {
  const Events events = cancelled_while_undo_2_hangs("saga-cancel-parallel", {.fail_at = 4, .parallel = true});
  REQUIRE(events.size() >= 4);
  CHECK(Events(events.begin(), events.begin() + 3) == Events{"scheduled 3", "scheduled 2", "scheduled 1"});
  const auto cancel = std::find(events.begin(), events.end(), "cancel");
  CHECK(std::count(cancel, events.end(), "scheduled 2") == 1);  // started again after the cancel dropped it
  for (const char* completed : {"completed 1", "completed 2", "completed 3"})  // each counts once
    CHECK(std::count(events.begin(), events.end(), completed) == 1);
}

TEST_CASE_METHOD(SagaEngine,
                 "compensate() with nothing added runs nothing, and a second compensate() runs nothing more",
                 "[pg][saga]") {
  auto run = engine.start_workflow<SagaTwiceWorkflow>("saga-twice", plan());
  CHECK(run.result(30s) == std::vector<std::size_t>{0, 2, 0, 0});
  CHECK(undo_events(engine, run.run_id()) == Events{"scheduled 2", "completed 2", "scheduled 1", "completed 1"});
  CHECK(log.lines("undo") == 2);
  CHECK(db.count("SELECT count(*) FROM {s}.journal_events WHERE kind = 'activity_scheduled'") == 4);
}

namespace {

// Adds undo 1, then three compensations that are invalid (a reserved payload, refused by add;
// invalid options; an unknown activity), then fails at step 3 and compensates, reporting what
// CompensationFailed names ("<activity> | <error type> | <attempts>" a line) or "none failed".
struct SagaInvalidWorkflow {
  static constexpr auto name = "saga_invalid";
  std::string operator()(WorkflowContext& ctx, const SagaPlan& plan) {
    Saga saga(ctx);
    auto undo = [&](int n) {
      return UndoInput{.log = plan.log, .schema = plan.schema, .workflow_id = ctx.workflow_id().str(), .n = n};
    };
    std::string report;
    ctx.call<SagaStep>(SagaStepInput{.log = plan.log, .n = 1});
    saga.add_compensation<SagaUndo>(undo(1));
    ctx.call<SagaStep>(SagaStepInput{.log = plan.log, .n = 2});
    try {
      saga.add_compensation(ActivityRef<Json, int>{"saga_undo"}, Json{{"$encoded", "not mine"}});
    } catch (const PayloadError&) {
      report += "add refused; ";
    }
    saga.add_compensation<SagaUndo>(undo(2), {.retry = RetryPolicy{.max_attempts = 0}});
    saga.add_compensation(ActivityRef<UndoInput, int>{"no_such_undo"}, undo(3));
    report += std::to_string(saga.size()) + " added\n";
    try {
      ctx.call<SagaStep>(SagaStepInput{.log = plan.log, .n = 3, .fail = true});
    } catch (const ActivityFailed&) {
      try {
        saga.compensate();
        return report + "none failed";
      } catch (const CompensationFailed& e) {
        for (const auto& f : e.failures())
          report += f.activity + " | " + f.error_type + " | " + std::to_string(f.attempts) + "\n";
        return report + std::to_string(e.failures().size()) + " of " + std::to_string(e.compensations());
      }
    }
    return report + "step 3 did not fail";
  }
};

}  // namespace

TEST_CASE("an invalid compensation is named as failed and the older ones still run", "[pg][saga][bad-input]") {
  RunningEngine env({}, [](Engine& e) {
    register_sagas(e);
    e.add<SagaInvalidWorkflow>();
  });
  make_undo_table(env.db);
  SagaLog log;
  auto run = env.engine.start_workflow<SagaInvalidWorkflow>("saga-invalid",
                                                            SagaPlan{.log = log.path, .schema = env.db.schema()});
  CHECK(run.result(30s) ==
        "add refused; 3 added\n"
        "no_such_undo | durable::UnknownActivity | 0\n"
        "saga_undo | durable::InvalidOptions | 0\n"
        "2 of 3");
  CHECK(undone(env.db, "saga-invalid") == std::vector<int>{1});
  CHECK(log.lines("undo 1") == 1);
  CHECK(log.lines("undo 2") == 0);
  CHECK(env.db.count("SELECT count(*) FROM {s}.tasks WHERE name <> 'saga_step' AND name <> 'saga_undo'") == 0);
}

#ifdef DURABLE_TEST_WORKER
namespace {

// Starts the saga (step 3 of 5 fails) on a worker process that `failpoints` kill while it
// compensates; `at_kill` checks what the kill left. Then an engine of this process finishes the
// run, and the journal, the undos' rows and their log must show compensations 2 then 1, each
// committed once, neither skipped.
void killed_while_compensating(const std::string& failpoints,
                               const std::function<void(const Events&, const SagaLog&)>& at_kill, int undo2_bodies) {
  TestDb db;
  SagaLog log;
  Engine client(db.options());  // starts the run and reads it; never started
  register_sagas(client);
  auto run = client.start_workflow<SagaWorkflow>("saga-killed", SagaPlan{.log = log.path, .schema = db.schema()});
  make_undo_table(db);  // before any engine runs it
  CHECK(exit_within(worker_with(db, failpoints), 60s) == 128 + SIGKILL);
  at_kill(undo_events(client, run.run_id()), log);

  past_its_leases(db);
  Engine engine(db.options());
  register_all(engine);
  register_sagas(engine);
  engine.start();
  expect_throw<WorkflowFailed>([&] { run.result(60s); }, "step 3 refused");
  CHECK(undo_events(client, run.run_id()) == Events{"scheduled 2", "completed 2", "scheduled 1", "completed 1"});
  CHECK(db.count("SELECT count(*) FROM {journal} j WHERE workflow_id = 'saga-killed' AND kind = "
                 "'activity_completed' AND name = 'saga_undo'") == 2);
  CHECK(undone(db, "saga-killed") == std::vector<int>{1, 2});
  CHECK(log.lines("undo 2") == undo2_bodies);
  CHECK(log.lines("undo 1") >= 1);
  CHECK(log.lines("undo 1") <= 2);  // a second time only when the kill cut its first attempt short
  CHECK(log.lines("undo 3") == 0);
  for (const char* step : {"step 1", "step 2", "step 3"}) CHECK(log.lines(step) == 1);
  CHECK(log.lines("step 4") == 0);
}

}  // namespace

TEST_CASE("an engine killed before compensation 2's outcome commits: the next runs it again, once, then 1",
          "[pg][saga][crash]") {
  // The bodies that return are steps 1, 2 and 3 (which fails), then undo 2: the 4th.
  killed_while_compensating(
      "task.before_commit=kill@4",
      [](const Events& events, const SagaLog& log) {
        CHECK(events == Events{"scheduled 2"});
        CHECK(log.lines("undo 2 attempt 1") == 1);
      },
      2);  // its lost attempt, then attempt 2 on the next engine
}

TEST_CASE("an engine killed right after compensation 2's outcome commits: the next never runs it again",
          "[pg][saga][crash]") {
  killed_while_compensating(
      "task.after_commit=kill@4",
      [](const Events& events, const SagaLog& log) {
        REQUIRE(events.size() >= 2);
        CHECK(Events(events.begin(), events.begin() + 2) == Events{"scheduled 2", "completed 2"});
        CHECK(std::count(events.begin(), events.end(), "completed 1") == 0);
        CHECK(log.lines("undo 2") == 1);
      },
      1);
}
#endif
