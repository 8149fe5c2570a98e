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
  CHECK(db.count("SELECT count(*) FROM {s}.runs WHERE workflow_id = 'greet-1'") == 1);
}

TEST_CASE_METHOD(RunningEngine, "id reuse policies decide whether an ended run's id may start again",
                 "[pg][idempotency]") {
  engine.start_workflow<HelloWorkflow>("done", "x").result(30s);
  CHECK_THROWS_AS(engine.start_workflow<HelloWorkflow>("done", "x"), WorkflowAlreadyStarted);
  CHECK_THROWS_AS(engine.start_workflow<HelloWorkflow>("done", "x", {.id_reuse = IdReusePolicy::allow_if_failed}),
                  WorkflowAlreadyStarted);  // it completed
  auto second = engine.start_workflow<HelloWorkflow>("done", "y", {.id_reuse = IdReusePolicy::allow_if_ended});
  CHECK(second.result(30s) == "hello, y");

  auto failed = engine.start_workflow<FailingWorkflow>("broken", "x");
  CHECK_THROWS_AS(failed.result(30s), WorkflowFailed);
  auto retried = engine.start_workflow<HelloWorkflow>("broken", "z", {.id_reuse = IdReusePolicy::allow_if_failed});
  CHECK(retried.result(30s) == "hello, z");

  auto running = engine.start_workflow<SleepWorkflow>("napping", 3600 * 1000);
  CHECK_THROWS_AS(engine.start_workflow<SleepWorkflow>("napping", 1, {.id_reuse = IdReusePolicy::allow_if_ended}),
                  WorkflowAlreadyStarted);  // a running run is never replaced
  // The run log keeps every run, with its final status.
  CHECK(db.count("SELECT count(*) FROM {s}.runs WHERE workflow_id = 'done' AND status = 'completed'") == 2);
  CHECK(db.count("SELECT count(*) FROM {s}.runs WHERE workflow_id = 'broken' AND status = 'failed'") == 1);
  CHECK(db.count("SELECT count(*) FROM {s}.runs WHERE workflow_id = 'broken' AND status = 'completed'") == 1);
  CHECK(db.count("SELECT count(*) FROM {s}.runs WHERE ended_at IS NULL") == 1);  // the nap
  running.cancel();
  CHECK(db.count("SELECT count(*) FROM {s}.runs WHERE workflow_id = 'napping' AND status = 'cancelled'") == 1);
}

TEST_CASE_METHOD(RunningEngine, "a redelivered event starts nothing new", "[pg][idempotency][triggers]") {
  engine.add_trigger<HelloWorkflow>("signup");
  auto first = engine.deliver("signup", Event{"evt-17", "grace"});
  auto redelivered = engine.deliver("signup", Json{{"event_id", "evt-17"}, {"payload", "grace"}});
  CHECK(first.started);
  CHECK_FALSE(redelivered.started);
  CHECK(first.run.id() == "signup:evt-17");
  CHECK(redelivered.run.run_id() == first.run.run_id());
  CHECK(first.run.result(30s) == "hello, grace");
  CHECK(db.count("SELECT count(*) FROM {s}.workflows") == 1);
}

TEST_CASE_METHOD(RunningEngine, "an event without a stable id is rejected at the door", "[pg][idempotency][triggers]") {
  engine.add_trigger<HelloWorkflow>("signup");
  expect_throw<InvalidEvent>([&] { engine.deliver("signup", Event{"", "x"}); }, "has no id");
  expect_throw<InvalidEvent>([&] { engine.deliver("signup", Json{{"payload", "x"}}); }, "event_id");
  expect_throw<UnknownTrigger>([&] { engine.deliver("nope", Event{"e1", "x"}); }, "no trigger named 'nope'");
  expect_throw<PayloadError>([&] { engine.deliver("signup", Event{"e2", 42}); }, "the input of workflow 'hello'");
  CHECK(db.count("SELECT count(*) FROM {s}.workflows") == 0);
  CHECK_THROWS_AS(engine.add_trigger<HelloWorkflow>("signup"), RegistrationError);
  CHECK_THROWS_AS(engine.add_trigger<HelloWorkflow>("bad:name"), RegistrationError);
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
  CHECK(db.count("SELECT count(*) FROM {s}.runs") == 1);
  CHECK(db.count("SELECT count(*) FROM {s}.journal") == 1);
  std::filesystem::remove_all(dir);
}
