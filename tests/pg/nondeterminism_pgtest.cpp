#include <catch2/catch.hpp>

#include "support/test_db.hpp"
#include "support/test_workflows.hpp"

using namespace durable;
using namespace durable::test;

namespace {
// Two versions of one workflow: v2 calls another activity at sequence number 0.
struct EvolvingV1 {
  static constexpr auto name = "evolving";
  std::string operator()(WorkflowContext& ctx, const std::string& s) {
    auto echoed = ctx.call<EchoActivity>(s);
    ctx.sleep(std::chrono::hours{1});
    return ctx.call<EchoActivity>(echoed);
  }
};
struct EvolvingV2 {
  static constexpr auto name = "evolving";
  std::string operator()(WorkflowContext& ctx, const std::string& s) {
    auto sum = ctx.call<AddActivity>(Pair{1, 2});
    ctx.sleep(std::chrono::hours{1});
    return ctx.call<EchoActivity>(s + std::to_string(sum));
  }
};
}  // namespace

TEST_CASE("under on_nondeterminism = fail, changed workflow code fails the run and writes no task",
          "[pg][replay][nondeterminism]") {
  TestDb db;
  {
    Engine v1(db.options());
    v1.add<EchoActivity>().add<EvolvingV1>();
    v1.start();
    v1.start_workflow<EvolvingV1>("evolve-1", "x");
    // Wait until the run sleeps: one activity done, a timer journaled.
    REQUIRE(wait_until(
        [&] { return db.count("SELECT count(*) FROM {s}.journal_events WHERE kind = 'timer_started'") == 1; }));
  }
  EngineOptions fail = db.options();
  fail.on_nondeterminism = OnNondeterminism::fail;
  Engine v2(fail);
  v2.add<EchoActivity>().add<AddActivity>().add<EvolvingV2>();
  v2.start();
  testing::advance_clock(db.url(), db.schema(), std::chrono::hours{2});  // the timer is due: v2 replays

  auto run = v2.workflow<EvolvingV2>("evolve-1");
  try {
    run.result(30s);
    FAIL("the run should have stopped");
  } catch (const NonDeterminismError& e) {
    const std::string message = e.what();
    CHECK_THAT(message, Catch::Contains("'evolve-1'"));
    CHECK_THAT(message, Catch::Contains("sequence number 0"));
    CHECK_THAT(message, Catch::Contains("journal holds activity 'echo'"));
    CHECK_THAT(message, Catch::Contains("asked for activity 'add'"));
  }
  CHECK(run.status() == WorkflowStatus::failed);
  CHECK(db.count("SELECT count(*) FROM {journal} jw WHERE workflow_id = 'evolve-1' AND kind = 'activity_scheduled'") ==
        1);  // only v1's echo
  CHECK(db.count("SELECT count(*) FROM {s}.tasks WHERE workflow_id = 'evolve-1' AND status <> 'cancelled'") == 0);
}

TEST_CASE_METHOD(RunningEngine, "time skipping fires a 24-hour durable sleep at once", "[pg][timer][testing]") {
  auto run = engine.start_workflow<SleepWorkflow>("day-nap", 24 * 3600 * 1000);
  REQUIRE(
      wait_until([&] { return db.count("SELECT count(*) FROM {s}.journal_events WHERE kind = 'timer_started'") > 0; }));
  testing::advance_clock(db.url(), db.schema(), std::chrono::hours{24});
  auto result = run.result(10s);
  CHECK(result["slept_ms"].get<long>() >= 24L * 3600 * 1000);
}
