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
                                  "register every workflow, activity and trigger first");
  expect_throw<RegistrationError>([&] { engine.add<AddActivity>(); }, "cannot register activity 'add'");
  expect_throw<RegistrationError>([&] { engine.add_trigger<HelloWorkflow>("signup"); },
                                  "cannot register trigger 'signup'");
  // Nothing was registered: the workflow cannot be started by this engine.
  expect_throw<UnknownWorkflow>([&] { engine.start_workflow<HelloWorkflow>("after-start", "x"); }, "hello");
  CHECK(db.count("SELECT count(*) FROM {s}.workflows") == 0);
}
