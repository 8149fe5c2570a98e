#include <catch2/catch.hpp>

#include "support/expect.hpp"

#include "support/test_db.hpp"
#include "support/test_workflows.hpp"

using namespace durable;
using namespace durable::test;

namespace {

const ActivityRef<std::string, std::string> unregistered{"not_registered"};
const ActivityRef<int, std::string> echo_with_int{"echo"};  // echo takes a string

struct CallsUnknownActivity {
  static constexpr auto name = "calls_unknown";
  std::string operator()(WorkflowContext& ctx, const std::string& s) { return ctx.call(unregistered, s); }
};
struct CallsWithBadInput {
  static constexpr auto name = "calls_bad_input";
  std::string operator()(WorkflowContext& ctx, const int& n) { return ctx.call(echo_with_int, n); }
};
struct CallsWithBadPolicy {
  static constexpr auto name = "calls_bad_policy";
  std::string operator()(WorkflowContext& ctx, const std::string& s) {
    return ctx.call<EchoActivity>(s, {.retry = RetryPolicy{.max_attempts = 0}});
  }
};

struct BadTimeout {
  static constexpr auto name = "bad_timeout";
  static ActivityOptions options() { return {.timeout = std::chrono::hours{25}}; }
  int operator()(ActivityContext&, const int& x) const { return x; }
};

void register_bad(Engine& engine) {
  register_all(engine);
  engine.add<CallsUnknownActivity>().add<CallsWithBadInput>().add<CallsWithBadPolicy>();
}

long long rows(const TestDb& db) {
  if (!db.schema_exists()) return 0;
  return db.count(
      "SELECT (SELECT count(*) FROM {s}.workflows) + (SELECT count(*) FROM {s}.journal_events) + "
      "(SELECT count(*) FROM {s}.tasks)");
}

// Runs a workflow that must fail with `type` before writing any task.
void expect_run_fails_without_task(const TestDb& db, Engine& engine, const std::string& workflow, const Json& input,
                                   const std::string& type, const std::string& message_part) {
  auto run = engine.start_workflow(workflow, "bad-" + workflow, input);
  try {
    run.result_json(std::chrono::seconds{30});
    FAIL("the run should have failed");
  } catch (const WorkflowFailed& e) {
    CHECK(e.error_type() == type);
    CHECK_THAT(e.what(), Catch::Contains(message_part));
  }
  CHECK(db.count("SELECT count(*) FROM {s}.tasks WHERE workflow_id = 'bad-" + workflow + "'") == 0);
}

}  // namespace

TEST_CASE("an unknown workflow name is rejected and writes nothing", "[pg][bad-input]") {
  TestDb db;
  Engine engine(db.options());
  register_bad(engine);
  expect_throw<UnknownWorkflow>([&] { engine.start_workflow("no_such_workflow", "w1", Json("x")); },
                                "no workflow named 'no_such_workflow'", "'hello'");
  CHECK(rows(db) == 0);
}

TEST_CASE("an input that does not convert to the declared type is rejected and writes nothing", "[pg][bad-input]") {
  TestDb db;
  Engine engine(db.options());
  register_bad(engine);
  expect_throw<PayloadError>([&] { engine.start_workflow("hello", "w2", Json(42)); }, "the input of workflow 'hello'");
  CHECK(rows(db) == 0);
}

TEST_CASE("an empty, oversized or NUL-containing workflow id is rejected and writes nothing", "[pg][bad-input]") {
  TestDb db;
  Engine engine(db.options());
  register_bad(engine);
  expect_throw<InvalidWorkflowId>([&] { engine.start_workflow<HelloWorkflow>("", "x"); }, "empty");
  expect_throw<InvalidWorkflowId>([&] { engine.start_workflow<HelloWorkflow>(std::string("a\0b", 3), "x"); }, "NUL");
  CHECK_THROWS_AS(engine.start_workflow<HelloWorkflow>(std::string(1001, 'x'), "x"), InvalidWorkflowId);
  CHECK(rows(db) == 0);
}

TEST_CASE("an invalid schema name is rejected before anything is created", "[pg][bad-input]") {
  TestDb db;
  for (const char* bad : {"", "Durable", "1abc", "a-b", "robert\"; DROP TABLE x; --",
                          "abcdefghijabcdefghijabcdefghijabcdefghijabcdefghij"}) {
    auto options = db.options();
    options.schema = bad;
    CHECK_THROWS_AS(Engine(options), InvalidSchemaName);
  }
  CHECK_FALSE(db.schema_exists());
}

TEST_CASE("bad engine options are rejected with the field named", "[pg][bad-input]") {
  TestDb db;
  auto options = db.options();
  options.activity_max_concurrency = 0;
  expect_throw<InvalidOptions>([&] { Engine engine(options); }, "activity_max_concurrency = 0");
}

TEST_CASE("a workflow calling an unknown activity fails without writing a task", "[pg][bad-input]") {
  TestDb db;
  Engine engine(db.options());
  register_bad(engine);
  engine.start();
  expect_run_fails_without_task(db, engine, "calls_unknown", "x", "durable::UnknownActivity",
                                "no activity named 'not_registered'");
}

TEST_CASE("a workflow passing an activity input of the wrong type fails without writing a task", "[pg][bad-input]") {
  TestDb db;
  Engine engine(db.options());
  register_bad(engine);
  engine.start();
  expect_run_fails_without_task(db, engine, "calls_bad_input", 7, "durable::PayloadError",
                                "the input of activity 'echo'");
}

TEST_CASE("a workflow giving an invalid retry policy at the call site fails without writing a task",
          "[pg][bad-input]") {
  TestDb db;
  Engine engine(db.options());
  register_bad(engine);
  engine.start();
  expect_run_fails_without_task(db, engine, "calls_bad_policy", "x", "durable::InvalidOptions",
                                "retry.max_attempts = 0");
}

TEST_CASE("a registered activity with an invalid declared policy fails registration", "[pg][bad-input]") {
  TestDb db;
  Engine engine(db.options());
  expect_throw<InvalidOptions>([&] { engine.add<BadTimeout>(); }, "timeout = 90000000ms");
  CHECK_THROWS_AS(engine.add<EchoActivity>().add<EchoActivity>(), RegistrationError);
}

TEST_CASE("registering after start() throws RegistrationError and changes nothing", "[pg][bad-input]") {
  TestDb db;
  Engine engine(db.options());
  engine.add<EchoActivity>();
  engine.start();
  expect_throw<RegistrationError>([&] { engine.add<HelloWorkflow>(); },
                                  "cannot register workflow 'hello' after Engine::start()",
                                  "register every workflow, activity, trigger and queue first");
  expect_throw<RegistrationError>([&] { engine.add<AddActivity>(); }, "cannot register activity 'add'");
  expect_throw<RegistrationError>([&] { engine.add_trigger<HelloWorkflow>("signup"); },
                                  "cannot register trigger 'signup'");
  // Nothing was registered: the workflow cannot be started by this engine.
  expect_throw<UnknownWorkflow>([&] { engine.start_workflow<HelloWorkflow>("after-start", "x"); }, "hello");
  CHECK(db.count("SELECT count(*) FROM {s}.workflows") == 0);
}

namespace {

const ActivityRef<std::string, std::string> late{"late"};  // registered only by the fixed build

// Tries an activity this build may not have, and goes on either way: a refused call keeps its step.
struct TriesLate {
  static constexpr auto name = "tries_late";
  std::string operator()(WorkflowContext& ctx, const std::string& s) {
    std::string first;
    try {
      first = ctx.call(late, s);
    } catch (const UnknownActivity&) {
      first = "refused";
    }
    return first + ", then " + ctx.call<EchoActivity>(s);
  }
};
// Needs it: the run fails where it is refused.
struct NeedsLate {
  static constexpr auto name = "needs_late";
  std::string operator()(WorkflowContext& ctx, const std::string& s) { return ctx.call(late, s); }
};
struct Late {
  static constexpr auto name = "late";
  std::string operator()(ActivityContext&, const std::string& s) const { return "late " + s; }
};

std::vector<std::string> kinds_and_steps(const History& history) {
  std::vector<std::string> out;
  for (const HistoryEvent& e : history.events) out.push_back(e.kind + "@" + std::to_string(e.step));
  return out;
}

}  // namespace

TEST_CASE("a workflow that catches a refused call goes on, and its replays refuse it at the same step",
          "[pg][bad-input]") {
  TestDb db;
  Engine engine(db.options());
  engine.add<TriesLate>().add<EchoActivity>();
  engine.start();
  auto run = engine.start_workflow<TriesLate>("tries-late", "x");
  // The echo's result wakes a replay that meets the refusal again before it gets to the echo.
  CHECK(run.result(std::chrono::seconds{30}) == "refused, then x");
  const History history = engine.runs().history(run.run_id());
  CHECK(kinds_and_steps(history) == std::vector<std::string>{"workflow_started@-1", "call_refused@0",
                                                             "activity_scheduled@1", "activity_completed@1",
                                                             "workflow_completed@-1"});
  CHECK(history.events[1].name == "late");
  CHECK(history.events[1].data.at("error_type") == "durable::UnknownActivity");
  CHECK_THAT(history.events[1].data.at("error_message").get<std::string>(),
             Catch::Contains("no activity named 'late'"));
  CHECK(db.count("SELECT count(*) FROM {s}.tasks WHERE workflow_id = 'tries-late' AND name = 'late'") == 0);
}

TEST_CASE("a run that a refused call failed resumes under a build that accepts the call, and forks from there",
          "[pg][bad-input]") {
  TestDb db;
  const OperatorAction ops{"oncall", "the late activity is deployed now"};
  RunId run_id;
  {
    Engine old_build(db.options());
    old_build.add<NeedsLate>().add<EchoActivity>();
    old_build.start();
    auto run = old_build.start_workflow<NeedsLate>("needs-late", "x");
    expect_throw<WorkflowFailed>([&] { run.result(std::chrono::seconds{30}); }, "no activity named 'late'");
    run_id = run.run_id();
    // The build that refused it refuses it again when resumed: the run fails the same way.
    auto again = old_build.runs().resume(run_id, ops);
    expect_throw<WorkflowFailed>([&] { again.result_json(std::chrono::seconds{30}); }, "no activity named 'late'");
  }
  Engine fixed_build(db.options());
  fixed_build.add<NeedsLate>().add<EchoActivity>().add<Late>();
  fixed_build.start();
  Runs runs = fixed_build.runs();
  CHECK(runs.resume(run_id, ops).result_json(std::chrono::seconds{30}) == "late x");
  CHECK(kinds_and_steps(runs.history(run_id)) ==
        std::vector<std::string>{"workflow_started@-1", "call_refused@0", "workflow_failed@-1", "workflow_resumed@-1",
                                 "call_refused@0", "workflow_failed@-1", "workflow_resumed@-1", "activity_scheduled@0",
                                 "activity_completed@0", "workflow_completed@-1"});
  // A fork copies step 0 as the fixed build ran it, not the refusals the resumes voided.
  auto forked = runs.fork(run_id, 1, ops);
  CHECK(forked.result_json(std::chrono::seconds{30}) == "late x");
  CHECK(kinds_and_steps(runs.history(forked.run_id()))[1] == "activity_scheduled@0");
}

namespace {
struct SleepsFor {  // sleeps its input in milliseconds
  static constexpr auto name = "sleeps_for";
  int operator()(WorkflowContext& ctx, const std::int64_t& ms) {
    ctx.sleep(Duration{ms});
    return 1;
  }
};
struct WaitsTooLong {  // a receive with a timeout beyond the longest timer, caught; then a short sleep
  static constexpr auto name = "waits_too_long";
  std::string operator()(WorkflowContext& ctx, const std::string& topic) {
    try {
      ctx.receive<std::string>(topic, Duration::max());
      return "received";
    } catch (const InvalidOptions& e) {
      ctx.sleep(1ms);
      return e.what();
    }
  }
};
}  // namespace

TEST_CASE("a timer beyond max_timer_duration fails the run with InvalidOptions and journals no timer",
          "[pg][bad-input][timers]") {
  TestDb db;
  Engine engine(db.options());
  engine.add<SleepsFor>().add<WaitsTooLong>();
  engine.start();
  const auto thousand_years = std::chrono::duration_cast<Duration>(std::chrono::years{1000}).count();
  for (const std::int64_t ms : {thousand_years, Duration::max().count()}) {
    const std::string id = "sleeps-" + std::to_string(ms);
    auto run = engine.start_workflow<SleepsFor>(id, ms);
    const auto failed = expect_throw<WorkflowFailed>([&] { run.result(30s); }, std::to_string(ms) + "ms",
                                                     "max_timer_duration = 3155695200000ms (100 years)");
    CHECK(failed.error_type() == "durable::InvalidOptions");
    CHECK(db.count("SELECT count(*) FROM {journal} jw WHERE workflow_id = '" + id + "' AND kind = 'timer_started'") ==
          0);
  }
  CHECK(engine.start_workflow<SleepsFor>("sleeps-briefly", 1).result(30s) == 1);
  // Caught, the refusal takes no step: the sleep after it is step 0, at every replay.
  auto caught = engine.start_workflow<WaitsTooLong>("waits", "never");
  CHECK_THAT(caught.result(30s), Catch::Contains("receive's timeout"));
  CHECK(kinds_and_steps(engine.runs().history(caught.run_id())) ==
        std::vector<std::string>{"workflow_started@-1", "timer_started@0", "timer_fired@0", "workflow_completed@-1"});
  // Waits on a handle follow the same bound.
  expect_throw<InvalidOptions>([&] { caught.result_json(Duration::max()); }, "result()'s timeout");
  expect_throw<InvalidOptions>([&] { caught.get_event_json("progress", Duration::max()); }, "get_event()'s timeout");
}
