// The runner and the step finisher without a database: a claimed run is replayed and what it
// decided committed under the claim's lease; a run whose code no longer replays its journal is
// blocked, not committed; a refused commit is decided again; and a finished step continues its
// workflow in place in one commit when this engine holds the journal, or commits alone otherwise.
#include <catch2/catch.hpp>

#include <atomic>

#include "pipeline/runner.hpp"
#include "pipeline/step_finisher.hpp"
#include "support/test_workflows.hpp"
#include "unit/stage_fakes.hpp"

using namespace durable;
using namespace durable::detail;
using namespace std::chrono_literals;

namespace {

// A runner over fakes, with no activity slots (nothing leased at once).
struct RunnerRig {
  Registry registry;
  PausedTypes paused;
  test::FakeReplayStore store;
  JournalCaches caches{store, registry};
  MetricsRecorder metrics;
  EngineSignals signals;
  std::atomic<bool> stopping{false};
  Replayer replayer{ReplaySettings{"me@test", OnNondeterminism::block, false, 1s},
                    registry,
                    paused,
                    store,
                    caches,
                    nullptr,
                    metrics,
                    signals,
                    stopping};
  Runner runner{RunnerSettings{"me@test", 1, 30s, 20ms, "v1"},
                paused,
                store,
                replayer,
                caches,
                metrics,
                signals.workflow_work,
                stopping};

  RunnerRig() {
    registry.activities.emplace("echo", make_activity<std::string>("echo", {}, test::EchoActivity{}));
    registry.workflows.emplace("hello", make_workflow<std::string>("hello", [] { return test::HelloWorkflow{}; }));
    store.name = "hello";
    paused.serve({"hello"}, {"echo"});
  }
};

// A run just started: its journal holds its start, which comes with the claim too.
pg::ClaimedWorkflow fresh_claim(test::FakeReplayStore& store) {
  store.journal("run-1") = {{0, journal::EventKind::workflow_started, -1, "", {{"input", "world"}}}};
  pg::ClaimedWorkflow claim;
  claim.workflow_id = "wf-1";
  claim.run_id = "run-1";
  claim.name = "hello";
  claim.next_seq = 1;
  claim.lease_token = 77;
  claim.now_us = 1'000'000;
  claim.start_data = Json{{"input", "world"}};
  return claim;
}

pg::ClaimedTask echo_task() {
  pg::ClaimedTask t;
  t.task_id = 5;
  t.run_id = "run-1";
  t.workflow_id = "wf-1";
  t.step = 0;
  t.name = "echo";
  t.attempt = 1;
  t.lease_token = 88;
  return t;
}

}  // namespace

TEST_CASE("a claimed fresh run is replayed and its first activity committed under the claim's lease",
          "[unit][runner]") {
  RunnerRig rig;
  rig.runner.process(fresh_claim(rig.store));
  REQUIRE(rig.store.commits.size() == 1);
  const pg::ReplayCommit& commit = rig.store.commits[0];
  CHECK(commit.run_id == "run-1");
  CHECK(commit.lease_token == 77);
  CHECK(commit.seen_seq == 1);
  CHECK(commit.status == journal::RunStatus::running);
  REQUIRE(commit.events.size() == 1);
  CHECK(commit.events[0].kind == journal::EventKind::activity_scheduled);
  REQUIRE(commit.tasks.size() == 1);
  CHECK(commit.tasks[0].name == "echo");
  CHECK(commit.tasks[0].input == "world");
  CHECK_FALSE(commit.tasks[0].claim);  // no slots here: nothing leased at once
  CHECK(rig.store.reads == 0);         // a fresh run's journal came with its claim
  CHECK(rig.metrics.replays == 1);
}

TEST_CASE("a run whose code no longer replays its journal is blocked, not committed", "[unit][runner]") {
  RunnerRig rig;
  pg::ClaimedWorkflow claim = fresh_claim(rig.store);
  rig.store.journal("run-1").push_back(
      {1, journal::EventKind::activity_scheduled, 0, "add", Json::object()});  // the code calls echo
  claim.next_seq = 2;
  claim.start_data.reset();
  rig.runner.process(claim);
  CHECK(rig.store.commits.empty());
  REQUIRE(rig.store.blocks.size() == 1);
  CHECK(rig.store.blocks[0]["step"] == 0);
  CHECK(rig.store.blocks[0]["journaled"].get<std::string>().find("add") != std::string::npos);
}

TEST_CASE("a replay commit refused because what it read changed is decided again and then goes in", "[unit][runner]") {
  RunnerRig rig;
  rig.store.refuse_next = 1;
  rig.runner.process(fresh_claim(rig.store));
  CHECK(rig.store.commits.size() == 1);
  CHECK(rig.store.reads == 1);  // the journal read anew before deciding again
}

TEST_CASE("a finished step continues its workflow in place in one commit when this engine holds its journal",
          "[unit][runner]") {
  RunnerRig rig;
  rig.runner.process(fresh_claim(rig.store));  // the journal is now this engine's copy
  std::vector<pg::StepCommit> batches;
  std::vector<pg::ReplayCommit> replays;  // what went in with each step (read while the statement runs)
  StepCommitter steps([&](const std::vector<const pg::StepCommit*>& batch) {
    for (const auto* s : batch) {
      batches.push_back(*s);
      if (s->replay) replays.push_back(*s->replay);
    }
    pg::StepOutcome done;
    done.finish = pg::FinishOutcome::committed;
    done.continued = true;
    done.base = 2;
    return std::vector<pg::StepOutcome>{done};
  });
  StepFinisher finisher(steps, "me@test", 1s, rig.metrics);
  finisher.continue_in_place_with(rig.replayer, rig.caches, rig.paused);
  const pg::ClaimedTask task = echo_task();
  const Json result = "there";
  const ErrorInfo none;
  const Committed committed = finisher.commit({task, true, result, none}, nullptr, nullptr);
  CHECK(committed.step.continued);
  REQUIRE(batches.size() == 1);
  CHECK(batches[0].task == &task);
  CHECK(batches[0].result == "there");
  CHECK(batches[0].expected_seq == 2);  // the journal as the replay saw it, before this outcome
  REQUIRE(replays.size() == 1);
  CHECK(replays[0].status == journal::RunStatus::completed);
  CHECK(replays[0].result == "hello, there");
  CHECK(rig.metrics.workflows_completed == 1);
  CHECK(rig.store.reads == 0);  // the copy was enough
}

TEST_CASE("a finished step of a run this engine does not replay commits alone", "[unit][runner]") {
  RunnerRig rig;
  std::vector<const pg::ReplayCommit*> replays;
  StepCommitter steps([&](const std::vector<const pg::StepCommit*>& batch) {
    for (const auto* s : batch) replays.push_back(s->replay);
    pg::StepOutcome done;
    done.finish = pg::FinishOutcome::committed;
    return std::vector<pg::StepOutcome>{done};
  });
  StepFinisher finisher(steps, "me@test", 1s, rig.metrics);  // an activity-only engine: no replays
  const pg::ClaimedTask task = echo_task();
  const Json result = "there";
  const ErrorInfo none;
  const Committed committed = finisher.commit({task, true, result, none}, nullptr, nullptr);
  CHECK_FALSE(committed.step.continued);
  CHECK_FALSE(committed.continued);
  REQUIRE(replays.size() == 1);
  CHECK(replays[0] == nullptr);
}
