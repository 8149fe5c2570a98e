#include <catch2/catch.hpp>

#include <atomic>
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

bool receiving(const TestDb& db, const std::string& workflow_id) {
  return db.count("SELECT count(*) FROM {journal} jw JOIN {s}.workflows w USING (run_id) WHERE w.workflow_id = '" +
                  workflow_id + "' AND w.latest AND w.status = 'running' AND jw.kind = 'receive_started'") == 1;
}

// A hop run that got its "go" while `failpoint` holds the replay that continues it (for a second).
WorkflowHandle<std::string> hop_held_by(RunningEngine& env, const std::string& id, const std::string& failpoint) {
  auto first = env.engine.start_workflow<HopWorkflow>(id, 0);
  REQUIRE(wait_until([&] { return receiving(env.db, id); }));
  detail::configure_failpoints(failpoint + "=sleep:1000");
  env.engine.send(id, "go", "first");
  std::this_thread::sleep_for(400ms);  // the replay decided to continue, and sleeps there
  return first;
}

long long expected_sum(int n) { return static_cast<long long>(n) * (n - 1) / 2; }

}  // namespace

TEST_CASE_METHOD(RunningEngine, "a loop of 4,000 steps continuing as new every 100 keeps each journal bounded",
                 "[pg][continue]") {
  constexpr int total = 4'000, every = 100, ticks = 50;
  auto first = engine.start_workflow<LoopWorkflow>("loop-10k", loop_of(total, every, ticks));
  // Messages sent all through the loop, many while a run is ending: none lost, none taken twice.
  std::thread sender([&] {
    for (int i = 0; i < ticks; ++i) {
      engine.send("loop-10k", "tick", "t" + std::to_string(i));
      std::this_thread::sleep_for(40ms);
    }
  });
  const LoopState last = first.result(600s);  // the first run's handle follows the chain
  sender.join();
  CHECK(last.done == total);
  CHECK(last.sum == expected_sum(total));
  std::vector<std::string> sent;
  for (int i = 0; i < ticks; ++i) sent.push_back("t" + std::to_string(i));
  CHECK(last.got == sent);  // each once, in send order, across the runs
  CHECK(runs_of(db, "loop-10k") == total / every);
  CHECK(runs_of(db, "loop-10k", "continued") == total / every - 1);
  CHECK(runs_of(db, "loop-10k", "completed") == 1);
  // Bounded: no run's journal holds more than its 100 steps (two events each), its receives and
  // its start and end.
  CHECK(db.count("SELECT max(next_seq) FROM {s}.workflows WHERE workflow_id = 'loop-10k'") <=
        2 * every + 2 * ticks + 4);
  CHECK(db.count("SELECT count(*) FROM {journal} jw WHERE workflow_id = 'loop-10k' AND kind = 'activity_completed'") ==
        total);
  // The chain: each run but the first continued the one before it, which names it.
  CHECK(db.count("SELECT count(*) FROM {s}.workflows n JOIN {s}.workflows p ON p.run_id = n.continued_from "
                 "WHERE n.workflow_id = 'loop-10k' AND n.started_by = 'continued' AND p.status = 'continued' "
                 "AND p.result->>'continued_as' = n.run_id::text") == total / every - 1);
  CHECK(engine.workflow("loop-10k").status() == WorkflowStatus::completed);
  CHECK(first.status() == WorkflowStatus::continued);
}

TEST_CASE_METHOD(RunningEngine, "the management API shows the chain of runs", "[pg][continue][runs]") {
  auto first = engine.start_workflow<LoopWorkflow>("loop-3", loop_of(30, 10));
  CHECK(first.result(60s).sum == expected_sum(30));
  Runs runs = engine.runs();
  RunInfo a = runs.get(first.run_id());
  CHECK(a.status == WorkflowStatus::continued);
  CHECK_FALSE(a.latest);
  CHECK(a.continued_from_run.empty());
  REQUIRE_FALSE(a.continued_as_run.empty());
  RunInfo b = runs.get(a.continued_as_run);
  CHECK(b.started_by == StartedBy::continued);
  CHECK(b.continued_from_run == a.run_id);
  CHECK(b.input.at("done") == 10);
  RunInfo c = runs.get(b.continued_as_run);
  CHECK(c.status == WorkflowStatus::completed);
  CHECK(c.latest);
  CHECK(c.continued_as_run.empty());
  CHECK(runs.latest("loop-3").run_id == c.run_id);
  RunFilter filter;
  filter.id_prefix = "loop-3";
  auto counts = runs.count_by_status(filter);
  CHECK(counts[WorkflowStatus::continued] == 2);
  CHECK(counts[WorkflowStatus::completed] == 1);
  filter.statuses = {WorkflowStatus::continued};
  CHECK(runs.list({filter}).runs.size() == 2);
  History h = runs.history(a.run_id);
  REQUIRE_FALSE(h.events.empty());
  CHECK(h.events.back().kind == "workflow_continued");
  CHECK(h.events.back().data.at("run_id") == b.run_id.str());
}

TEST_CASE_METHOD(RunningEngine, "messages a run never received go to the next run, in send order",
                 "[pg][continue][messages]") {
  // All sent before the first run starts: run 0 takes one "go", run 1 the other, run 2 "done".
  Engine& e = engine;
  auto first = e.start_workflow<HopWorkflow>("hop-msgs", 0);
  e.send("hop-msgs", "go", "first");
  e.send("hop-msgs", "done", "finished");
  e.send("hop-msgs", "go", "second");
  CHECK(first.result(30s) == "finished");
  CHECK(runs_of(db, "hop-msgs") == 3);
  CHECK(db.count("SELECT count(*) FROM {s}.messages m JOIN {s}.workflows w USING (run_id) "
                 "WHERE w.workflow_id = 'hop-msgs' AND m.received_step IS NOT NULL") == 3);
  CHECK(db.count("SELECT count(*) FROM {s}.messages m JOIN {s}.workflows w USING (run_id) "
                 "WHERE w.workflow_id = 'hop-msgs' AND w.latest AND m.payload = '\"finished\"'") == 1);
}

TEST_CASE("a message sent while a run commits its continue goes to the next run", "[pg][continue][messages]") {
  RunningEngine env;
  FailpointsOff off;
  // The commit holds the run's row and sleeps before it commits: these sends wait for it, then
  // find the run ended (continued) and go to the next.
  auto first = hop_held_by(env, "hop-race", "replay.before_continue_commit");
  env.engine.send("hop-race", "go", "second");
  env.engine.send("hop-race", "done", "finished");
  CHECK(first.result(30s) == "finished");
  CHECK(runs_of(env.db, "hop-race") == 3);
}

TEST_CASE("a cancel asked for after the replay read the journal is not lost with the run it ends",
          "[pg][continue][cancel]") {
  RunningEngine env;
  FailpointsOff off;
  auto first = hop_held_by(env, "hop-cancel", "replay.before_commit");
  CHECK(first.cancel("stop the loop"));
  // Refused (the journal grew), decided again: the cancel is seen at continue_as_new.
  expect_throw<WorkflowCancelled>([&] { first.result(30s); }, "stop the loop");
  CHECK(runs_of(env.db, "hop-cancel") == 1);
  CHECK(first.status() == WorkflowStatus::cancelled);
}

TEST_CASE_METHOD(RunningEngine, "a handle of an earlier run cancels the chain's running run",
                 "[pg][continue][cancel]") {
  auto first = engine.start_workflow<HopWorkflow>("hop-stop", 0);
  engine.send("hop-stop", "go", "first");
  REQUIRE(wait_until([&] { return runs_of(db, "hop-stop") == 2 && receiving(db, "hop-stop"); }));
  CHECK(first.cancel("enough"));
  expect_throw<WorkflowCancelled>([&] { first.result(30s); }, "enough");
  CHECK(runs_of(db, "hop-stop", "continued") == 1);
  CHECK(runs_of(db, "hop-stop", "cancelled") == 1);
  CHECK_FALSE(engine.runs().cancel(first.run_id(), {"test", "already ended"}));
}

TEST_CASE_METHOD(RunningEngine, "continue_as_new with an input the workflow does not take throws into the code",
                 "[pg][continue][bad-input]") {
  auto run = engine.start_workflow<HopWorkflow>("hop-bad", -1);
  const std::string result = run.result(30s);
  CHECK(result.rfind("refused: ", 0) == 0);
  CHECK(result.find("the input of workflow 'hop'") != std::string::npos);
  CHECK(runs_of(db, "hop-bad") == 1);
  CHECK(events_of(db, "hop-bad", "workflow_continued") == 0);
}

TEST_CASE_METHOD(RunningEngine, "a child that continues as new tells its parent once, when its chain ends",
                 "[pg][continue][children]") {
  const nlohmann::json input = loop_of(25, 10);
  auto parent = engine.start_workflow<CallChildWorkflow>("loop-parent", CallChildInput{"loop-parent/c", "loop", input});
  const std::string result = parent.result(60s);
  REQUIRE(result.rfind("result ", 0) == 0);
  CHECK(nlohmann::json::parse(result.substr(7)).at("sum") == expected_sum(25));
  CHECK(runs_of(db, "loop-parent/c") == 3);
  CHECK(events_of(db, "loop-parent", "child_completed") == 1);
  CHECK(events_of(db, "loop-parent", "child_failed") == 0);
  // Each run of the chain is the parent's child.
  CHECK(db.count("SELECT count(*) FROM {s}.workflows c JOIN {s}.workflows p ON p.run_id = c.parent_run_id "
                 "WHERE c.workflow_id = 'loop-parent/c' AND p.workflow_id = 'loop-parent'") == 3);
}

#ifdef DURABLE_TEST_WORKER
TEST_CASE("engines killed while continuing as new leave one chain, each step once", "[pg][continue][crash]") {
  TestDb db;
  Engine client(db.options());
  register_all(client);
  auto first = client.start_workflow<LoopWorkflow>("loop-crash", loop_of(30, 10));
  // The first worker dies with the continue's transaction open: the run goes on as it was.
  CHECK(exit_within(worker_with(db, "replay.before_continue_commit=kill@1"), 60s) == 128 + SIGKILL);
  CHECK(runs_of(db, "loop-crash") == 1);
  CHECK(runs_of(db, "loop-crash", "running") == 1);
  past_its_leases(db);
  // The second dies just after the continue committed. Another of its threads may have replayed
  // the next run in that moment and leased its first activity: lost with the worker, that body
  // runs again (the loop's calls have attempts to spare), and its step still commits once.
  CHECK(exit_within(worker_with(db, "replay.after_continue_commit=kill@1"), 60s) == 128 + SIGKILL);
  CHECK(runs_of(db, "loop-crash") == 2);
  CHECK(db.count("SELECT count(*) FROM {s}.workflows WHERE workflow_id = 'loop-crash' AND latest "
                 "AND status = 'running'") == 1);
  past_its_leases(db);
  pid_t worker = spawn_worker(db.url(), {db.schema(), "serve"});
  CHECK(first.result(120s).sum == expected_sum(30));
  kill(worker, SIGTERM);
  wait_for(worker);
  CHECK(runs_of(db, "loop-crash") == 3);
  CHECK(runs_of(db, "loop-crash", "continued") == 2);
  CHECK(
      db.count("SELECT count(*) FROM {journal} jw WHERE workflow_id = 'loop-crash' AND kind = 'activity_completed'") ==
      30);
}
#endif
