// The journal's vocabulary (src/journal/events.hpp) against every writer of the journal: the
// replay's C++, and the SQL that journals on its own (a start, a schedule's start, a child's start,
// continue-as-new, an activity's outcome, a terminate, a cancel request, the tell_parent trigger,
// a resume, a fork's copies). Real engines write at least one event of each kind, then every
// event is read back through the one reader: none may fail it or carry a key it does not know.
#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "journal/events.hpp"
#include "support/expect.hpp"
#include "support/test_db.hpp"
#include "support/test_workflows.hpp"

using namespace durable;
using namespace durable::test;

namespace {

// Takes a patch's new path: a patched event.
struct PatchedFlow {
  static constexpr auto name = "vocab_patched";
  std::string operator()(WorkflowContext& ctx, const std::string&) {
    return ctx.patched("vocab-change") ? "new path" : "old path";
  }
};

const ActivityRef<std::string, std::string> unregistered_activity{"vocab_not_registered"};
const WorkflowRef<std::string, std::string> unregistered_workflow{"vocab_not_registered"};

// Calls an activity and a child this build does not have, and goes on: two call_refused events,
// one of each call.
struct RefusedFlow {
  static constexpr auto name = "vocab_refused";
  std::string operator()(WorkflowContext& ctx, const std::string& s) {
    std::string out;
    try {
      out = ctx.call(unregistered_activity, s);
    } catch (const UnknownActivity&) {
      out = "activity refused";
    }
    try {
      out += ", " + ctx.call_child(unregistered_workflow, ctx.workflow_id().str() + "/c", s);
    } catch (const UnknownWorkflow&) {
      out += ", child refused";
    }
    return out;
  }
};

// Fails where its activity fails: a resume retries that step (workflow_resumed's retry_steps).
struct BoomFlow {
  static constexpr auto name = "vocab_boom";
  int operator()(WorkflowContext& ctx, const std::string& why) { return ctx.call<BoomActivity>(why); }
};

void register_vocabulary(Engine& engine) {
  engine.add<PatchedFlow>().add<RefusedFlow>().add<BoomFlow>().add_trigger<HelloWorkflow>("vocab_signup");
}

const OperatorAction vocabulary_ops{"ops@example", "the vocabulary test"};

bool waits_in_receive(const TestDb& db, const std::string& workflow_id) {
  return wait_until([&] { return events_of(db, workflow_id, "receive_started") >= 1; });
}

}  // namespace

TEST_CASE(
    "every event kind a run journals reads back through the journal's one reader, with no field it does not "
    "know",
    "[pg][vocabulary]") {
  RunningEngine env({}, register_vocabulary);
  TestDb& db = env.db;
  Engine& engine = env.engine;
  Runs runs = engine.runs();

  // A scheduled start (start_workflow.sql with the schedule's context): every minute, the clock
  // moved a minute on so that one fire is due and within its grace.
  engine.schedules().create("vocab",
                            {.workflow = HelloWorkflow::name, .input = Json("scheduled"), .cron = "* * * * *"});
  testing::advance_clock(db.url(), db.schema(), std::chrono::seconds{60});
  REQUIRE(wait_until([&] {
    return db.count("SELECT count(*) FROM {s}.workflows WHERE started_by = 'schedule' AND status = 'completed'") >= 1;
  }));
  engine.schedules().remove("vocab");

  // A plain start, a trigger's: workflow_started, activity_scheduled, activity_completed,
  // workflow_completed.
  auto hello = engine.start_workflow<HelloWorkflow>("vocab-hello", "world");
  auto triggered = engine.deliver("vocab_signup", Event{"e-1", "trigger"});
  // Timers and side effects: timer_started, timer_fired, side_effect (now, uuid).
  auto sleeper = engine.start_workflow<SleepWorkflow>("vocab-sleeper", 10);
  // activity_failed (caught, and not), workflow_failed.
  auto caught = engine.start_workflow<CatchFailureWorkflow>("vocab-caught", "on purpose");
  auto failing = engine.start_workflow<FailingWorkflow>("vocab-failing", "on purpose");
  auto boom = engine.start_workflow<BoomFlow>("vocab-boom", "on purpose");
  // Messages: receive_started, message_received; a receive that times out; event_set.
  auto inbox = engine.start_workflow<InboxWorkflow>("vocab-inbox", InboxInput{1, 0});
  auto approval = engine.start_workflow<ApprovalWorkflow>("vocab-approval", 50);
  auto progress = engine.start_workflow<ProgressWorkflow>("vocab-progress", 0);
  // wait_any: wait_chosen (the timer wins).
  auto first_of = engine.start_workflow<FirstOfWorkflow>("vocab-first-of", FirstOfInput{1, 50, 0});
  // Children: child_started, a child's workflow_started (commit_replay.sql), child_completed and
  // child_failed (tell_parent), an activity_scheduled with options (the double's retry policy).
  auto child_ok = engine.start_workflow<CallChildWorkflow>("vocab-child-ok", CallChildInput{"vocab-child-ok/c"});
  auto child_failed = engine.start_workflow<CallChildWorkflow>(
      "vocab-child-failed", CallChildInput{"vocab-child-failed/c", "failing", "on purpose"});
  // Continue-as-new: workflow_continued, the next run's workflow_started (continue_run.sql), a
  // receive of no time (receive_timed_out at once); and a child that continues, whose next run
  // carries its parent on.
  auto loop = engine.start_workflow<LoopWorkflow>("vocab-loop", loop_of(2, 1));
  auto loop_child = engine.start_workflow<CallChildWorkflow>(
      "vocab-loop-parent", CallChildInput{"vocab-loop-parent/c", LoopWorkflow::name, Json(loop_of(2, 1))});
  // patched, call_refused (an activity's and a child's).
  auto patched = engine.start_workflow<PatchedFlow>("vocab-patched", "x");
  auto refused = engine.start_workflow<RefusedFlow>("vocab-refused", "x");
  // A cancel seen by the code: cancel_requested (request_cancel.sql), cancel_delivered,
  // workflow_cancelled with its error.
  auto cancelled = engine.start_workflow<InboxWorkflow>("vocab-cancelled", InboxInput{1, 0});
  // A parent cancelled while it awaits its child: the child is asked, and ends cancelled
  // (child_failed of status cancelled, from tell_parent).
  auto guardian = engine.start_workflow<GuardianWorkflow>("vocab-guardian", 0);
  // A terminate: workflow_cancelled by cancel_runs.sql; its child is asked to cancel.
  auto terminated = engine.start_workflow<NestWorkflow>("vocab-terminated", NestInput{1});

  CHECK(hello.result(30s) == "hello, world");
  CHECK(triggered.run.result(30s) == "hello, trigger");
  CHECK(sleeper.result(30s).contains("id"));
  CHECK(caught.result(30s)["caught"] == true);
  CHECK_THROWS_AS(failing.result(30s), WorkflowFailed);
  CHECK_THROWS_AS(boom.result(30s), WorkflowFailed);

  REQUIRE(waits_in_receive(db, "vocab-inbox"));
  engine.send("vocab-inbox", "item", std::string("one"));
  CHECK(inbox.result(30s) == std::vector<std::string>{"one"});
  CHECK(approval.result(30s) == "timed out");
  REQUIRE(waits_in_receive(db, "vocab-progress"));
  engine.send("vocab-progress", "go", std::string("went"));
  CHECK(progress.result(30s) == "went");
  CHECK(first_of.result(30s) == std::vector<std::string>{"timed out"});

  CHECK(child_ok.result(30s) == "result 2");
  CHECK_THAT(child_failed.result(30s), Catch::StartsWith("failed failed"));
  // The id of a run that ended, not to be reused: child_start_failed.
  auto taken = engine.start_workflow<CallChildWorkflow>("vocab-taken", CallChildInput{"vocab-hello"});
  CHECK(taken.result(30s) == "taken completed");

  CHECK(loop.result(30s).done == 2);
  CHECK_THAT(loop_child.result(30s), Catch::StartsWith("result "));
  CHECK(patched.result(30s) == "new path");
  CHECK(refused.result(30s) == "activity refused, child refused");

  REQUIRE(waits_in_receive(db, "vocab-cancelled"));
  CHECK(cancelled.cancel("the vocabulary test cancels it"));
  CHECK_THROWS_AS(cancelled.result(30s), WorkflowCancelled);
  REQUIRE(waits_in_receive(db, "vocab-guardian/c"));
  CHECK(guardian.cancel("the vocabulary test cancels it"));
  CHECK_THAT(guardian.result(30s), Catch::StartsWith("child cancelled"));
  REQUIRE(waits_in_receive(db, "vocab-terminated/c"));
  CHECK(runs.terminate(terminated.run_id(), vocabulary_ops));
  CHECK_THROWS_AS(engine.workflow<NestWorkflow>("vocab-terminated/c").result(30s), WorkflowCancelled);

  // Operators' resumes of the failed runs (run_store.cpp): workflow_resumed, of no step (the code
  // failed) and of the failed activity's (its new attempt fails again: activity_failed once more).
  CHECK_THROWS_AS(runs.resume(failing.run_id(), vocabulary_ops).result_json(30s), WorkflowFailed);
  CHECK_THROWS_AS(runs.resume(boom.run_id(), vocabulary_ops).result_json(30s), WorkflowFailed);
  CHECK(events_of(db, "vocab-boom", "activity_failed") == 2);
  // A fork copies events (copy_fork_journal.sql) and goes on from them.
  auto forked = runs.fork(hello.run_id(), 1, vocabulary_ops, {.workflow_id = "vocab-hello-fork"});
  CHECK(forked.result_json(30s) == "hello, world");

  REQUIRE(wait_until([&] { return db.count("SELECT count(*) FROM {s}.workflows WHERE status = 'running'") == 0; }));

  // Every event, one a row (those a row carries in `more` too), through the one reader.
  std::set<std::string> seen;
  const auto rows = db.query(
      "SELECT w.workflow_id, j.run_id, j.seq, j.kind, j.data::text FROM {s}.journal_events j "
      "JOIN {s}.workflows w USING (run_id) ORDER BY w.workflow_id, j.run_id, j.seq");
  for (const auto& row : rows) {
    const std::string workflow_id = row[0].as<std::string>();
    const int seq = row[2].as<int>();
    const std::string kind_text = row[3].as<std::string>();
    const Json data = Json::parse(row[4].as<std::string>());
    INFO("run " << row[1].as<std::string>() << " of '" << workflow_id << "', event " << seq << " (" << kind_text
                << "): " << data.dump());
    journal::EventKind kind{};
    try {
      kind = journal::event_kind_from_text(kind_text);
    } catch (const Error& e) {
      FAIL_CHECK("a kind the vocabulary does not have: " << e.what());
      continue;
    }
    seen.insert(kind_text);
    CHECK_NOTHROW(journal::decode(kind, data));
    CAPTURE(kind_text, seq);
    CHECK(journal::unknown_fields(kind, data) == std::vector<std::string>{});
  }

  // Every kind there is was written above: a new kind fails here until this test writes one.
  std::vector<std::string> missing;
  for (std::size_t i = 0; i < std::variant_size_v<journal::EventData>; ++i) {
    const std::string kind(journal::to_text(static_cast<journal::EventKind>(i)));
    if (seen.count(kind) == 0) missing.push_back(kind);
  }
  INFO("kinds no run above journaled: each kind needs a run here that writes it");
  CHECK(missing == std::vector<std::string>{});
  CHECK(seen.size() == std::variant_size_v<journal::EventData>);
}
