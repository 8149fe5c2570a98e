#include <catch2/catch.hpp>

#include <thread>

#include "base/failpoint.hpp"
#include "support/expect.hpp"
#include "support/process.hpp"
#include "support/test_db.hpp"
#include "support/test_workflows.hpp"
#include "support/workers.hpp"

using namespace durable;
using namespace durable::test;

namespace {

std::string status_of(const TestDb& db, const std::string& workflow_id) {
  auto r = db.query("SELECT status FROM {s}.workflows WHERE workflow_id = '" + workflow_id + "' AND latest");
  return r.empty() ? "none" : r[0][0].as<std::string>();
}

bool waiting_for_go(const TestDb& db, const std::string& workflow_id) {
  return events_of(db, workflow_id, "receive_started") == 1;
}

}  // namespace

TEST_CASE_METHOD(RunningEngine, "a parent starts children at once and gets each one's result", "[pg][children]") {
  auto parent = engine.start_workflow<FanOutWorkflow>("fan", 10);
  CHECK(parent.result(60s) == 110);
  for (int i = 1; i <= 10; ++i) CHECK(runs_of(db, "fan/" + std::to_string(i)) == 1);
  CHECK(events_of(db, "fan", "child_started") == 10);
  CHECK(events_of(db, "fan", "child_completed") == 10);
  // The management API shows the parent of each child and lists the children by parent.
  const RunInfo child = engine.runs().latest("fan/3");
  CHECK(child.started_by == StartedBy::child);
  CHECK(child.parent_run_id == parent.run_id());
  RunQuery by_parent;
  by_parent.filter.parent_run_id = parent.run_id();
  CHECK(engine.runs().list(by_parent).runs.size() == 10);
  CHECK(engine.runs().count_by_status(by_parent.filter).at(WorkflowStatus::completed) == 10);
}

TEST_CASE_METHOD(RunningEngine, "a taken child id throws WorkflowAlreadyStarted at the call, the same on replays",
                 "[pg][children]") {
  CHECK(engine.start_workflow<DoubleWorkflow>("kid", 4).result(30s) == 8);
  // The parent replays the start after the activity it calls on catching the error.
  CHECK(engine.start_workflow<CallChildWorkflow>("parent-1", CallChildInput{"kid", "double", 5}).result(30s) ==
        "taken completed");
  CHECK(runs_of(db, "kid") == 1);
  CHECK(events_of(db, "parent-1", "child_start_failed") == 1);
  CHECK(events_of(db, "parent-1", "child_started") == 0);
  // Under allow_if_ended the ended run makes room.
  CHECK(engine.start_workflow<CallChildWorkflow>("parent-2", CallChildInput{"kid", "double", 5, true}).result(30s) ==
        "result 10");
  CHECK(runs_of(db, "kid") == 2);
}

TEST_CASE_METHOD(RunningEngine, "a failed or cancelled child is ChildWorkflowFailed in the parent", "[pg][children]") {
  auto failed = engine.start_workflow<CallChildWorkflow>("parent-f", CallChildInput{"kid-f", "failing", "why"});
  CHECK(failed.result(30s) == "failed failed std::logic_error: workflow gave up: why");

  auto cancelled = engine.start_workflow<CallChildWorkflow>("parent-c", CallChildInput{"kid-c", "sleeper", 600'000});
  REQUIRE(wait_until([&] { return events_of(db, "kid-c", "timer_started") == 1; }));
  CHECK(engine.workflow("kid-c").cancel());
  CHECK(cancelled.result(30s) == "failed cancelled durable::WorkflowCancelled: the child run was cancelled");
}

TEST_CASE_METHOD(RunningEngine, "a child left running when its parent ends is cancelled, unless abandoned",
                 "[pg][children][cancel]") {
  CHECK(engine.start_workflow<NestWorkflow>("leaver", NestInput{1, false, false}).result(30s) == "left");
  CHECK(wait_until([&] { return status_of(db, "leaver/c") == "cancelled"; }));
  CHECK(db.count("SELECT count(*) FROM {journal} jw WHERE workflow_id = 'leaver/c' AND kind = 'cancel_requested' "
                 "AND data->>'reason' LIKE '%parent run ended%'") == 1);

  CHECK(engine.start_workflow<NestWorkflow>("abandoner", NestInput{1, true, false}).result(30s) == "left");
  REQUIRE(wait_until([&] { return waiting_for_go(db, "abandoner/c"); }));
  engine.send("abandoner/c", "go", std::string("on my own"));
  CHECK(engine.workflow<NestWorkflow>("abandoner/c").result(30s) == "on my own");
}

TEST_CASE_METHOD(RunningEngine, "cancelling a parent cancels its children down the whole tree",
                 "[pg][children][cancel]") {
  auto root = engine.start_workflow<NestWorkflow>("root", NestInput{3});
  REQUIRE(wait_until([&] { return waiting_for_go(db, "root/c/c/c"); }));
  CHECK(root.cancel());
  for (const char* id : {"root/c", "root/c/c", "root/c/c/c"}) {
    CHECK(wait_until([&] { return status_of(db, id) == "cancelled"; }));
  }
}

TEST_CASE_METHOD(RunningEngine, "children whose parent ended while they were missed are cancelled by the sweep",
                 "[pg][children][cancel]") {
  auto root = engine.start_workflow<NestWorkflow>("swept", NestInput{2});
  REQUIRE(wait_until([&] { return waiting_for_go(db, "swept/c/c"); }));
  // Ended behind the engine's back, as by an engine that died before cancelling its children.
  db.query(
      "UPDATE {s}.workflows SET status = 'failed', error_type = 'x', ended_at = now() WHERE workflow_id = 'swept'");
  CHECK(wait_until([&] { return status_of(db, "swept/c/c") == "cancelled"; }, 20s));
  CHECK(status_of(db, "swept/c") == "cancelled");
}

TEST_CASE("a child id taken after the parent's replay read it refuses the commit, and the parent sees it taken",
          "[pg][children]") {
  RunningEngine env;
  FailpointsOff off;
  detail::configure_failpoints("replay.after_child_ids_read=sleep:1500");
  auto parent = env.engine.start_workflow<CallChildWorkflow>("racer", CallChildInput{"contested", "sleeper", 600'000});
  std::this_thread::sleep_for(500ms);  // the replay read "contested" as free and sleeps
  env.engine.start_workflow<SleepWorkflow>("contested", 600'000);
  // Without the commit's refusal the parent would journal a child that never went in, and wait
  // for it for good.
  CHECK(parent.result(30s) == "taken running");
  CHECK(runs_of(env.db, "contested") == 1);
  CHECK(env.db.count("SELECT count(*) FROM {s}.workflows WHERE workflow_id = 'contested' AND started_by = 'call'") ==
        1);
}

#ifdef DURABLE_TEST_WORKER
TEST_CASE("engines killed while starting children start each child once", "[pg][children][crash]") {
  TestDb db;
  Engine client(db.options());
  register_all(client);
  auto parent = client.start_workflow<FanOutWorkflow>("crash-fan", 8);
  // The first worker dies after reading the children's ids, the second after committing their start.
  CHECK(exit_within(worker_with(db, "replay.after_child_ids_read=kill@1"), 60s) == 128 + SIGKILL);
  CHECK(runs_of(db, "crash-fan/1") == 0);
  past_its_leases(db);
  CHECK(exit_within(worker_with(db, "replay.after_commit=kill@1"), 60s) == 128 + SIGKILL);
  CHECK(events_of(db, "crash-fan", "child_started") == 8);
  past_its_leases(db);
  pid_t worker = spawn_worker(db.url(), {db.schema(), "serve"});
  CHECK(parent.result(120s) == 72);
  kill(worker, SIGTERM);
  wait_for(worker);
  for (int i = 1; i <= 8; ++i) CHECK(runs_of(db, "crash-fan/" + std::to_string(i)) == 1);
  CHECK(events_of(db, "crash-fan", "child_started") == 8);
  CHECK(events_of(db, "crash-fan", "child_completed") == 8);
}
#endif

TEST_CASE_METHOD(RunningEngine, "a fork that would copy a child still running is refused", "[pg][children][runs]") {
  auto root = engine.start_workflow<NestWorkflow>("fork-parent", NestInput{1});
  REQUIRE(wait_until([&] { return waiting_for_go(db, "fork-parent/c"); }));
  const OperatorAction ops{"ops", "try it again"};
  expect_throw<InvalidRunState>([&] { engine.runs().fork(root.run_id(), 1, ops, {.workflow_id = "fork-copy"}); },
                                "its child 'fork-parent/c' (step 0) had not ended");
  CHECK(runs_of(db, "fork-copy") == 0);
  // From step 0 nothing of the child is copied: the copy starts its own.
  engine.runs().fork(root.run_id(), 0, ops, {.workflow_id = "fork-copy"});
  CHECK(wait_until([&] { return waiting_for_go(db, "fork-copy/c"); }));
}
