// The management API (durable/runs.hpp) against a real PostgreSQL: list, read, resume, fork,
// cancel, delete, prune and the audit trail, and bad input that writes nothing.
#include <catch2/catch.hpp>

#include <atomic>
#include <set>
#include <thread>

#include "base/failpoint.hpp"
#include "support/expect.hpp"
#include "support/test_db.hpp"
#include "support/test_sql.hpp"
#include "support/test_workflows.hpp"

using namespace durable;
using namespace durable::test;

namespace {

// An activity that fails until the test fixes its cause, and counts its bodies per input.
std::atomic<bool> cause_fixed{false};
std::atomic<int> flaky_bodies{0};
const ActivityRef<int, int> flaky{"flaky"};
const WorkflowRef<int, int> flaky_flow{"flaky_flow"};

// Counts the bodies of AddActivity-like steps, to see which steps a fork runs again.
std::atomic<int> counted_bodies{0};
const ActivityRef<Pair, int> counted{"counted"};
const WorkflowRef<int, int> counted_chain{"counted_chain"};
// One counted step under the same idempotency key, whatever the input.
const WorkflowRef<int, int> keyed_once{"keyed_once"};

void register_runs_definitions(Engine& engine) {
  engine.add_activity(flaky, [](ActivityContext&, const int& x) {
    ++flaky_bodies;
    if (!cause_fixed) throw std::runtime_error("the ledger is closed");
    return x * 2;
  });
  engine.add_workflow(flaky_flow, [](WorkflowContext& ctx, const int& x) {
    const int a = ctx.call<AddActivity>(Pair{x, 1});
    return ctx.call(flaky, a);
  });
  engine.add_activity(counted, [](ActivityContext&, const Pair& p) {
    ++counted_bodies;
    return p.a + p.b;
  });
  engine.add_workflow(counted_chain, [](WorkflowContext& ctx, const int& x) {
    int v = x;
    for (int i = 0; i < 5; ++i) v = ctx.call(counted, Pair{v, 1});
    return v;
  });
  engine.add_workflow(keyed_once, [](WorkflowContext& ctx, const int& x) {
    return ctx.call(counted, Pair{x, 1}, {.idempotency_key = "the-one-key"});
  });
}

const OperatorAction ops{"ops@example", "the ledger was reopened"};

struct RunsEngine : RunningEngine {
  RunsEngine() : RunningEngine({}, register_runs_definitions) {
    cause_fixed = false;
    flaky_bodies = 0;
    counted_bodies = 0;
  }
  Runs& runs() { return engine.runs(); }
  // Prunes the runs ended before `cutoff` while a transaction that ran `sql` (test SQL) holds its
  // rows: the transaction commits once the prune waits for a lock (or has ended).
  PruneOutcome prune_beside(const std::string& sql, TimePoint cutoff) {
    pqxx::connection conn(db.url());
    pqxx::work blocker(conn);
    blocker.exec(test_sql(sql, "\"" + db.schema() + "\""));
    PruneOutcome pruned;
    std::atomic<bool> done{false};
    std::thread pruner([&] {
      pruned = runs().prune(cutoff, ops);
      done = true;
    });
    wait_until([&] {
      return done || db.count("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%" +
                              db.schema() + "%'") > 0;
    });
    blocker.commit();
    pruner.join();
    return pruned;
  }
  long long rows() const {
    return db.count(
        "SELECT (SELECT count(*) FROM {s}.workflows) + (SELECT count(*) FROM {s}.journal_events) + "
        "(SELECT count(*) FROM {s}.tasks) + (SELECT count(*) FROM {s}.attempts) + (SELECT count(*) FROM {s}.audit)");
  }
};

}  // namespace

TEST_CASE_METHOD(RunsEngine, "runs are listed newest first, filtered, counted and paged stably while runs start",
                 "[pg][runs]") {
  for (int i = 0; i < 5; ++i)
    CHECK(engine.start_workflow<ChainWorkflow>("order-" + std::to_string(i), i).result(30s) == i + 5);
  CHECK_THROWS_AS(engine.start_workflow<FailingWorkflow>("order-bad", "why").result(30s), WorkflowFailed);
  CHECK(engine.start_workflow<HelloWorkflow>("greet-1", "ada").result(30s) == "hello, ada");

  RunPage all = runs().list();
  REQUIRE(all.runs.size() == 7);
  CHECK(all.next_cursor.empty());
  CHECK(all.runs.front().workflow_id == "greet-1");  // newest first
  CHECK(all.runs.back().workflow_id == "order-0");

  RunPage failed = runs().list({.filter = {.statuses = {WorkflowStatus::failed}}});
  REQUIRE(failed.runs.size() == 1);
  CHECK(failed.runs[0].workflow_id == "order-bad");
  CHECK(runs().list({.filter = {.workflow_name = "chain"}}).runs.size() == 5);
  CHECK(runs().list({.filter = {.id_prefix = "order-"}}).runs.size() == 6);
  CHECK(runs().list({.filter = {.id_prefix = "order_"}}).runs.empty());  // '_' is no wildcard
  CHECK(runs()
            .list({.filter = {.statuses = {WorkflowStatus::completed, WorkflowStatus::failed},
                              .workflow_name = "failing"}})
            .runs.size() == 1);

  auto counts = runs().count_by_status({.id_prefix = "order-"});
  CHECK(counts[WorkflowStatus::completed] == 5);
  CHECK(counts[WorkflowStatus::failed] == 1);
  CHECK(counts.count(WorkflowStatus::running) == 0);
  // Counted up to at_most + 1 a status: 5 completed stop at 3 (more than 2), 1 failed is exact.
  auto capped = runs().count_by_status({.id_prefix = "order-"}, 2);
  CHECK(capped[WorkflowStatus::completed] == 3);
  CHECK(capped[WorkflowStatus::failed] == 1);
  CHECK(capped.count(WorkflowStatus::running) == 0);
  CHECK(runs().count_by_status({.id_prefix = "order-"}, 5)[WorkflowStatus::completed] == 5);
  expect_throw<InvalidArgument>([&] { runs().count_by_status({}, -1); }, "at_most = -1 is negative");

  // Pages of 3, with a run started between pages: each run once, the new one on none.
  std::vector<RunId> seen;
  RunPage page = runs().list({.limit = 3});
  for (const auto& r : page.runs) seen.push_back(r.run_id);
  engine.start_workflow<HelloWorkflow>("greet-late", "bob").result(30s);
  while (!page.next_cursor.empty()) {
    page = runs().list({.limit = 3, .cursor = page.next_cursor});
    for (const auto& r : page.runs) seen.push_back(r.run_id);
  }
  CHECK(seen.size() == 7);
  CHECK(std::set<RunId>(seen.begin(), seen.end()).size() == 7);
  CHECK(runs().list().runs.size() == 8);

  // Time ranges: nothing was created before the first run or ended in the future.
  const auto first_created = all.runs.back().created_at;
  CHECK(runs().list({.filter = {.created_until = first_created}}).runs.empty());
  CHECK(runs().list({.filter = {.created_from = first_created}}).runs.size() == 8);
  CHECK(runs().list({.filter = {.ended_from = std::chrono::system_clock::now() + 1h}}).runs.empty());
}

TEST_CASE_METHOD(RunsEngine, "a run reads in full, with its history of events and attempts", "[pg][runs]") {
  auto run = engine.start_workflow(flaky_flow, "flaky-1", 20);
  CHECK_THROWS_AS(run.result(30s), WorkflowFailed);
  RunInfo info = runs().get(run.run_id());
  CHECK(info.workflow_id == "flaky-1");
  CHECK(info.workflow_name == "flaky_flow");
  CHECK(info.status == WorkflowStatus::failed);
  CHECK(info.input == 20);
  CHECK(info.error_type == "durable::ActivityFailed");
  CHECK_THAT(info.error_message, Catch::Contains("the ledger is closed"));
  CHECK(info.started_by == StartedBy::call);
  CHECK(info.latest);
  CHECK(info.ended_at.has_value());
  CHECK(info.activities == 2);
  CHECK(info.attempts == 2);
  CHECK(info.failed_attempts == 1);
  CHECK(runs().latest("flaky-1").run_id == run.run_id());

  History h = runs().history(run.run_id());
  std::vector<std::string> kinds;
  for (const auto& e : h.events) kinds.push_back(e.kind);
  CHECK(kinds == std::vector<std::string>{"workflow_started", "activity_scheduled", "activity_completed",
                                          "activity_scheduled", "activity_failed", "workflow_failed"});
  CHECK_FALSE(h.next_seq.has_value());
  REQUIRE(h.attempts.size() == 2);
  CHECK(h.attempts[0].activity == "add");
  CHECK(h.attempts[0].outcome == "completed");
  CHECK(h.attempts[1].activity == "flaky");
  CHECK(h.attempts[1].outcome == "failed");
  CHECK_THAT(h.attempts[1].error_message, Catch::Contains("the ledger is closed"));

  // Paged: two events a page, the attempts with the page that scheduled their activity.
  History first = runs().history(run.run_id(), {.from_seq = 0, .limit = 2});
  CHECK(first.events.size() == 2);
  REQUIRE(first.next_seq == 2);
  CHECK(first.attempts.size() == 1);
  History second = runs().history(run.run_id(), {.from_seq = 2, .limit = 2});
  CHECK(second.events.front().seq == 2);
  CHECK(second.attempts.size() == 1);
  CHECK(second.attempts[0].activity == "flaky");
}

TEST_CASE_METHOD(
    RunsEngine,
    "a failed run resumes from its journal: the failed step gets new attempts, nothing before it runs again",
    "[pg][runs]") {
  auto run = engine.start_workflow(flaky_flow, "flaky-2", 5);
  CHECK_THROWS_AS(run.result(30s), WorkflowFailed);
  CHECK(flaky_bodies == 1);
  cause_fixed = true;  // the operator fixes the cause, then resumes
  auto resumed = runs().resume(run.run_id(), ops);
  CHECK(resumed.run_id() == run.run_id());
  CHECK(WorkflowHandle<int>(resumed).result(30s) == 12);
  CHECK(run.status() == WorkflowStatus::completed);
  CHECK(flaky_bodies == 2);
  // The add step ran once; the journal shows the failure, the resume and what came after.
  CHECK(db.count("SELECT count(*) FROM {s}.journal_events WHERE run_id = '" + run.run_id().str() +
                 "' AND kind = 'activity_completed' AND name = 'add'") == 1);
  CHECK(db.count("SELECT count(*) FROM {s}.journal_events WHERE run_id = '" + run.run_id().str() +
                 "' AND kind = 'workflow_resumed'") == 1);
  auto audit = runs().audit();
  REQUIRE(audit.size() == 1);
  CHECK(audit[0].action == "resume");
  CHECK(audit[0].actor == "ops@example");
  CHECK(audit[0].reason == "the ledger was reopened");
  CHECK(audit[0].run_id == run.run_id());
  CHECK(audit[0].workflow_id == "flaky-2");
  // A completed run is not resumed again.
  expect_throw<InvalidRunState>([&] { runs().resume(run.run_id(), ops); }, "is completed",
                                "only a failed or blocked run can be resumed", "fork it");
}

TEST_CASE_METHOD(RunsEngine, "a fork from step N copies the steps before N and runs the rest with the current code",
                 "[pg][runs]") {
  auto source = engine.start_workflow(counted_chain, "ledger-1", 10);
  CHECK(source.result(30s) == 15);
  CHECK(counted_bodies == 5);

  auto forked = runs().fork(source.run_id(), 2, ops, {.workflow_id = "ledger-1-replay"});
  CHECK(WorkflowHandle<int>(forked).result(30s) == 15);
  CHECK(counted_bodies == 8);  // steps 2, 3 and 4 ran again; 0 and 1 came from the source's journal
  RunInfo info = runs().get(forked.run_id());
  CHECK(info.started_by == StartedBy::fork);
  CHECK(info.forked_from_run == source.run_id());
  CHECK(info.forked_from_step == 2);
  CHECK(info.input == 10);
  // Its attempts are those it ran: the copied steps' attempts were the source's.
  CHECK(info.activities == 5);
  CHECK(info.attempts == 3);
  const History h = runs().history(forked.run_id());
  REQUIRE(h.attempts.size() == 3);
  CHECK(h.attempts[0].step == 2);

  // Under the same id, once its latest run has ended: the fork becomes the latest run.
  auto again = runs().fork(source.run_id(), 0, ops);
  CHECK(WorkflowHandle<int>(again).result(30s) == 15);
  CHECK(engine.workflow("ledger-1").run_id() == again.run_id());
  CHECK(source.result(1s) == 15);  // the source run is kept, with its history

  // Outside the journal: the message names the valid range.
  const long long before = rows();
  expect_throw<InvalidArgument>([&] { runs().fork(source.run_id(), 6, ops); }, "has steps 0 to 4", "give 0", "to 5");
  expect_throw<InvalidArgument>([&] { runs().fork(source.run_id(), -1, ops); }, "from step -1");
  expect_throw<WorkflowAlreadyStarted>(
      [&] { runs().fork(source.run_id(), 1, ops, {.workflow_id = "ledger-1-replay"}); }, "ledger-1-replay");
  CHECK(rows() == before);
  auto audit = runs().audit();
  REQUIRE(audit.size() == 2);
  CHECK(audit[0].action == "fork");
  CHECK(audit[0].details["from_step"] == 0);
}

TEST_CASE_METHOD(RunsEngine, "an ended run is deleted with its history, and prune deletes runs ended before a cutoff",
                 "[pg][runs]") {
  auto first = engine.start_workflow<HelloWorkflow>("tidy", "one");
  CHECK(first.result(30s) == "hello, one");
  auto second = engine.start_workflow<HelloWorkflow>("tidy", "two", {.id_reuse = IdReusePolicy::allow_if_ended});
  CHECK(second.result(30s) == "hello, two");
  runs().remove(second.run_id(), ops);
  expect_throw<WorkflowNotFound>([&] { runs().get(second.run_id()); }, second.run_id().str());
  CHECK(db.count("SELECT count(*) FROM {s}.journal_events WHERE run_id = '" + second.run_id().str() + "'") == 0);
  CHECK(db.count("SELECT count(*) FROM {s}.tasks WHERE run_id = '" + second.run_id().str() + "'") == 0);
  CHECK(engine.workflow("tidy").run_id() == first.run_id());  // the newest run left is the latest again

  for (int i = 0; i < 5; ++i) engine.start_workflow<ChainWorkflow>("old-" + std::to_string(i), i).result(30s);
  const auto cutoff = std::chrono::system_clock::now() + 1s;                // the database clock is this machine's
  auto nap = engine.start_workflow<SleepWorkflow>("napping", 3600 * 1000);  // running: never pruned
  PruneOutcome dry = runs().prune(cutoff, ops, true);
  CHECK(dry.runs == 6);
  CHECK(db.count("SELECT count(*) FROM {s}.workflows") == 7);
  PruneOutcome pruned = runs().prune(cutoff, ops);
  CHECK(pruned.runs == 6);
  CHECK(pruned.batches == 1);
  CHECK(db.count("SELECT count(*) FROM {s}.workflows") == 1);
  CHECK(db.count("SELECT count(*) FROM {journal} jw WHERE workflow_id <> 'napping'") == 0);
  CHECK(db.count("SELECT count(*) FROM {s}.attempts") == 0);
  CHECK(nap.status() == WorkflowStatus::running);
  auto audit = runs().audit();
  REQUIRE(audit.size() == 2);  // the dry run recorded nothing
  CHECK(audit[0].action == "prune");
  CHECK(audit[0].details["runs"] == 6);
  CHECK(audit[1].action == "delete");
  CHECK(runs().audit({.limit = 1, .before = audit[0].id}).at(0).id == audit[1].id);
  CHECK(runs().cancel(nap.run_id(), ops));
  CHECK_THROWS_AS(nap.result(10s), WorkflowCancelled);
  CHECK_FALSE(runs().cancel(nap.run_id(), ops));  // ended already: nothing recorded
  CHECK(runs().audit().size() == 3);
}

TEST_CASE_METHOD(RunsEngine, "a run that runs again while a prune waits for its row is kept with its whole journal",
                 "[pg][runs]") {
  for (const char* id : {"gone-1", "gone-2", "kept"})
    CHECK(engine.start_workflow<ChainWorkflow>(id, 1).result(30s) == 6);
  const RunId kept = engine.workflow("kept").run_id();
  const long long events = db.count("SELECT next_seq FROM {s}.workflows WHERE workflow_id = 'kept'");
  const auto cutoff = std::chrono::system_clock::now() + 1s;
  // As a resume would: the run is running again.
  const PruneOutcome pruned =
      prune_beside("UPDATE {s}.workflows SET status = 'running', ended_at = NULL WHERE workflow_id = 'kept'", cutoff);
  CHECK(pruned.runs == 2);
  CHECK(db.count("SELECT count(*) FROM {s}.journal_events WHERE run_id = '" + kept.str() + "'") == events);
  CHECK(db.count("SELECT count(*) FROM {s}.workflows") == 1);
}

TEST_CASE_METHOD(RunsEngine, "a run resumed and ended again while a prune waits for its row leaves no history behind",
                 "[pg][runs]") {
  for (const char* id : {"gone-1", "again"}) CHECK(engine.start_workflow<ChainWorkflow>(id, 1).result(30s) == 6);
  const auto cutoff = std::chrono::system_clock::now() + 1s;  // the run that ended again is still due
  // As a resume and the run's new end would: a new event in the journal, the run ended again.
  const PruneOutcome pruned = prune_beside(
      "INSERT INTO {s}.journal (run_id, seq, kind, data) SELECT run_id, next_seq, 'workflow_resumed', '{{}}' "
      "FROM {s}.workflows WHERE workflow_id = 'again'; "
      "UPDATE {s}.workflows SET next_seq = next_seq + 1, ended_at = now() WHERE workflow_id = 'again'",
      cutoff);
  CHECK(pruned.runs == 2);
  CHECK(db.count("SELECT count(*) FROM {s}.workflows") == 0);
  CHECK(db.count("SELECT count(*) FROM {s}.journal") == 0);  // the event written meanwhile went too
}

TEST_CASE_METHOD(RunsEngine,
                 "deleting the latest run while another run of its id is deleted leaves the id a latest run",
                 "[pg][runs]") {
  std::vector<RunId> ids;  // oldest first: the run that stays, the one deleted aside, the latest
  for (const char* who : {"one", "two", "three"}) {
    auto run = engine.start_workflow<HelloWorkflow>("racy", who, {.id_reuse = IdReusePolicy::allow_if_ended});
    run.result(30s);
    ids.push_back(run.run_id());
  }
  // Another session deletes the middle run and holds its transaction open: the newest run left
  // after the latest is deleted, as the delete below first sees it.
  pqxx::connection other(db.url());
  pqxx::work aside(other);
  aside.exec(fmt::format("DELETE FROM \"{}\".workflows WHERE run_id = '{}'", db.schema(), ids[1]));
  std::thread remove([&] { runs().remove(ids[2], ops); });
  REQUIRE(wait_until([&] {  // its promotion of the middle run waits for that run's row lock
    return db.count("SELECT count(*) FROM pg_locks WHERE NOT granted AND locktype = 'transactionid'") == 1;
  }));
  aside.commit();
  remove.join();
  CHECK(engine.workflow("racy").run_id() == ids[0]);
  CHECK(db.count("SELECT count(*) FROM {s}.workflows WHERE workflow_id = 'racy' AND latest") == 1);
}

TEST_CASE_METHOD(RunsEngine, "bad management input gets a typed error that says what was wrong, and writes nothing",
                 "[pg][runs][bad-input]") {
  auto nap = engine.start_workflow<SleepWorkflow>("napping", 3600 * 1000);
  REQUIRE(wait_until(
      [&] { return db.count("SELECT count(*) FROM {s}.journal_events WHERE kind = 'timer_started'") == 1; }));
  const long long before = rows();
  expect_throw<InvalidArgument>([&] { runs().list({.limit = 0}); }, "limit 0", "1 to 1000");
  expect_throw<InvalidArgument>([&] { runs().list({.limit = 1001}); }, "limit 1001");
  const auto now = std::chrono::system_clock::now();
  expect_throw<InvalidArgument>([&] { runs().list({.filter = {.created_from = now, .created_until = now - 1h}}); },
                                "created range", "`from` must be before `until`");
  expect_throw<InvalidArgument>([&] { runs().count_by_status({.ended_from = now, .ended_until = now}); },
                                "ended range");
  expect_throw<InvalidArgument>([&] { runs().list({.cursor = "not-a-cursor"}); }, "cursor 'not-a-cursor' is malformed");
  expect_throw<InvalidArgument>([&] { runs().list({.filter = {.parent_run_id = RunId{"x"}}}); }, "not a run id");
  expect_throw<InvalidArgument>([&] { runs().history(nap.run_id(), {.limit = 0}); }, "history limit 0");
  expect_throw<WorkflowNotFound>([&] { runs().get(RunId{"00000000-0000-0000-0000-000000000000"}); },
                                 "no run with run id");
  expect_throw<WorkflowNotFound>([&] { runs().latest("nobody"); }, "no workflow with id 'nobody'");
  expect_throw<WorkflowNotFound>([&] { runs().history(RunId{"bogus"}); }, "no run with run id 'bogus'");
  expect_throw<InvalidArgument>([&] { runs().cancel(nap.run_id(), {"ops", ""}); }, "needs a reason");
  expect_throw<InvalidArgument>([&] { runs().cancel(nap.run_id(), {"ops", "  "}); }, "needs a reason");
  expect_throw<InvalidRunState>([&] { runs().remove(nap.run_id(), ops); }, "is running",
                                "only an ended run can be deleted");
  expect_throw<InvalidRunState>([&] { runs().resume(nap.run_id(), ops); }, "is running",
                                "only a failed or blocked run can be resumed");
  expect_throw<InvalidRunState>([&] { runs().fork(nap.run_id(), 0, ops); }, "is running", "cancel it first",
                                "ForkOptions::workflow_id");
  expect_throw<InvalidArgument>([&] { runs().prune(now, {"ops", ""}); }, "needs a reason");
  CHECK(rows() == before);
  CHECK(nap.status() == WorkflowStatus::running);
}

TEST_CASE("retention prunes runs that ended longer ago than it, from one engine at a time", "[pg][runs][retention]") {
  TestDb db;
  auto options = db.options();
  options.retention = 1s;
  Engine first(options), second(options);
  register_all(first);
  register_all(second);
  first.start();
  second.start();
  for (int i = 0; i < 4; ++i)
    CHECK(first.start_workflow<HelloWorkflow>("kept-" + std::to_string(i), "x").result(30s) == "hello, x");
  auto nap = first.start_workflow<SleepWorkflow>("napping", 3600 * 1000);
  CHECK(wait_until([&] { return db.count("SELECT count(*) FROM {s}.workflows") == 1; }, 15s));
  CHECK(db.count("SELECT count(*) FROM {journal} jw WHERE workflow_id <> 'napping'") == 0);
  CHECK(nap.status() == WorkflowStatus::running);
  auto audit = first.runs().audit();
  REQUIRE_FALSE(audit.empty());
  long long pruned = 0;
  for (const auto& e : audit) {
    CHECK(e.action == "prune");
    CHECK_THAT(e.reason, Catch::Contains("retention: runs that ended more than 1000 ms ago"));
    CHECK_THAT(e.actor, Catch::Contains("default@"));
    pruned += e.details["runs"].get<long long>();
  }
  CHECK(pruned == 4);  // each run pruned once, by one of the two engines
  options.retention = -1s;
  expect_throw<InvalidOptions>([&] { Engine bad(options); }, "EngineOptions::retention = -1000ms is invalid");
}

TEST_CASE("retention's cutoff follows the database clock: a run ended now is pruned once the clock skips past it",
          "[pg][runs][retention][clock]") {
  TestDb db;
  auto options = db.options();
  options.retention = 30s;  // a round every 3 s
  Engine engine(options);
  register_all(engine);
  engine.start();
  CHECK(engine.start_workflow<HelloWorkflow>("ended-now", "x").result(30s) == "hello, x");
  // By the database clock the run ended an hour ago; by this host's clock, a moment ago.
  testing::advance_clock(db.url(), db.schema(), 1h);
  const auto skipped = std::chrono::steady_clock::now();
  CHECK(wait_until([&] { return db.count("SELECT count(*) FROM {s}.workflows") == 0; }, 10s));
  INFO("waited "
       << std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - skipped).count()
       << " ms after the clock skipped an hour");
  const auto audit = engine.runs().audit();
  REQUIRE(audit.size() == 1);
  // The cutoff it recorded is the database clock's, 30 s back: past the run's end, an hour ahead of this host's.
  const auto cutoff_us = audit[0].details["ended_before_us"].get<std::int64_t>();
  const auto host_us =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  CHECK(cutoff_us > host_us + std::chrono::microseconds{50min}.count());
}

TEST_CASE_METHOD(RunsEngine, "a prune whose batch's answer was lost reports the runs that batch deleted",
                 "[pg][runs][faults]") {
  for (int i = 0; i < 3; ++i)
    CHECK(engine.start_workflow<HelloWorkflow>("lost-" + std::to_string(i), "x").result(30s) == "hello, x");
  detail::configure_failpoints("lost_answer.prune_batch=fail@1");  // the first batch commits, its answer is lost
  struct Reset {
    ~Reset() { detail::configure_failpoints(""); }
  } reset;
  const PruneOutcome pruned = runs().prune(std::chrono::system_clock::now() + 1h, ops);
  CHECK(pruned.runs == 3);
  CHECK(pruned.batches == 1);
  CHECK(db.count("SELECT count(*) FROM {s}.workflows") == 0);
  const auto audit = runs().audit();
  REQUIRE(audit.size() == 1);
  CHECK(audit[0].details["runs"] == 3);
}

TEST_CASE("the management statements find rows by index, never by reading a whole table", "[pg][runs][fast-path]") {
  TestDb db;
  {
    Engine migrates(db.options());
    migrates.start();
  }
  // 3,000 ended runs (1 % failed, a third of another workflow), each with three events, a task and
  // its attempt; 10 running; 2,000 audit entries. Analyzed, as any table that size would be.
  db.query(R"(
INSERT INTO {s}.workflows (workflow_id, run_id, name, status, input, result, error_type, error_message, next_seq,
                           runnable, created_at, updated_at, ended_at)
SELECT 'loaded-' || g, md5('loaded-' || g)::uuid, CASE WHEN g % 3 = 0 THEN 'other' ELSE 'chain' END,
       CASE WHEN g % 100 = 0 THEN 'failed' ELSE 'completed' END, '1', '2',
       CASE WHEN g % 100 = 0 THEN 'durable::ActivityFailed' END, CASE WHEN g % 100 = 0 THEN 'it broke' END, 4, false,
       now() - interval '3 days' + g * interval '1 minute', now() - interval '3 days' + g * interval '1 minute',
       now() - interval '3 days' + g * interval '1 minute' + interval '1 millisecond'
FROM generate_series(1, 3000) AS g;
INSERT INTO {s}.workflows (workflow_id, run_id, name, status, input, next_seq, runnable)
SELECT 'live-' || g, md5('live-' || g)::uuid, 'chain', 'running', '1', 2, false FROM generate_series(1, 10) AS g;
INSERT INTO {s}.journal (run_id, seq, kind, step, name, data)
SELECT md5('loaded-' || g)::uuid, e.seq, e.kind, e.step, e.name, e.data
FROM generate_series(1, 3000) AS g,
     (VALUES (0, 'workflow_started', NULL::integer, NULL::text, '{{"input": 1}}'::jsonb),
             (1, 'activity_scheduled', 0, 'add', '{{"input": {{"a": 1, "b": 1}}, "options": {{}}}}'),
             (2, 'activity_completed', 0, 'add', '{{"result": 2, "attempts": 2, "started_us": 1}}'),
             (3, 'workflow_completed', NULL, NULL, '{{"result": 2}}')) AS e(seq, kind, step, name, data);
INSERT INTO {s}.tasks (run_id, workflow_id, step, name, input, options, status, attempt, available_at,
                       attempt_started_at)
SELECT md5('loaded-' || g)::uuid, 'loaded-' || g, 1, 'add', '{{"a": 1, "b": 1}}', '{{}}', 'failed', 1, now(), now()
FROM generate_series(100, 3000, 100) AS g;
INSERT INTO {s}.attempts (task_id, run_id, step, attempt, started_at, ended_at, outcome)
SELECT 1000000 + g, md5('loaded-' || g)::uuid, 0, 1, now(), now(), 'failed' FROM generate_series(1, 3000) AS g;
INSERT INTO {s}.audit (actor, action, reason) SELECT 'loader', 'cancel', 'loaded' FROM generate_series(1, 2000);
ANALYZE {s}.workflows, {s}.journal, {s}.tasks, {s}.attempts, {s}.audit)");
  const std::string tables = "('workflows', 'tasks', 'journal', 'attempts', 'audit')";
  auto seq_scans = [&] {
    return db.count("SELECT coalesce(sum(seq_scan), 0) FROM pg_stat_user_tables WHERE schemaname = '" + db.schema() +
                    "' AND relname IN " + tables);
  };
  std::this_thread::sleep_for(300ms);
  const long long before = seq_scans();
  {
    Engine engine(db.options());  // not started: the management API needs no running engine
    register_all(engine);
    Runs& runs = engine.runs();
    RunPage page = runs.list({.limit = 50});
    CHECK(page.runs.size() == 50);
    CHECK(runs.list({.limit = 50, .cursor = page.next_cursor}).runs.size() == 50);
    CHECK(runs.list({.filter = {.statuses = {WorkflowStatus::failed}}}).runs.size() == 30);
    CHECK(runs.list({.filter = {.workflow_name = "other"}, .limit = 20}).runs.size() == 20);
    CHECK(runs.list({.filter = {.id_prefix = "loaded-12"}, .limit = 1000}).runs.size() == 111);
    const auto cut = std::chrono::system_clock::now() - 72h + 99min + 30s;  // after run 99 ended, before run 100
    CHECK(runs.list({.filter = {.ended_until = cut}, .limit = 1000}).runs.size() == 99);
    const RunId run = runs.latest("loaded-2007").run_id;
    CHECK(runs.get(run).activities == 1);
    CHECK(runs.history(run).events.size() == 4);
    const auto attempts = runs.history(run).attempts;  // the failed one's row, the successful one's event
    REQUIRE(attempts.size() == 2);
    CHECK(attempts[0].outcome == "failed");
    CHECK(attempts[1].outcome == "completed");
    CHECK(runs.get(run).attempts == 2);
    CHECK(runs.get(run).failed_attempts == 1);
    runs.remove(runs.latest("loaded-8").run_id, ops);
    CHECK(runs.prune(cut, ops).runs == 98);
    CHECK(WorkflowHandle<int>(runs.fork(run, 1, ops, {.workflow_id = "forked-2007"})).id() == "forked-2007");
    CHECK(runs.resume(runs.latest("loaded-200").run_id, ops).id() == "loaded-200");
    CHECK(runs.cancel(runs.latest("live-1").run_id, ops));
    CHECK(runs.audit({.limit = 10}).size() == 10);
  }  // sessions report their counters as they end
  std::this_thread::sleep_for(300ms);
  CHECK(seq_scans() - before == 0);
}

TEST_CASE_METHOD(RunsEngine,
                 "a run whose code went on after a failure is not resumed, and a resumed step counts attempts afresh",
                 "[pg][runs]") {
  // Step 1 fails; the code catches it, calls step 2, then gives up: step 1 cannot run again.
  const WorkflowRef<int, int> went_on{"went_on"};
  RunningEngine env({}, [&](Engine& e) {
    register_runs_definitions(e);
    e.add_workflow(went_on, [](WorkflowContext& ctx, const int& x) {
      ctx.call<AddActivity>(Pair{x, 1});
      try {
        return ctx.call(flaky, x);
      } catch (const ActivityFailed&) {
        ctx.call<AddActivity>(Pair{x, 2});
        throw;
      }
    });
  });
  auto run = env.engine.start_workflow(went_on, "went-on-1", 3);
  CHECK_THROWS_AS(run.result(30s), WorkflowFailed);
  const long long before = env.db.count("SELECT count(*) FROM {s}.journal_events");
  expect_throw<InvalidRunState>([&] { env.engine.runs().resume(run.run_id(), ops); }, "cannot be resumed",
                                "went on after the failure of step 1", "fork it from step 1");
  CHECK(env.db.count("SELECT count(*) FROM {s}.journal_events") == before);

  // A plain failure resumes: the step's attempts go on numbering, its policy starts again.
  auto plain = env.engine.start_workflow(flaky_flow, "flaky-3", 1);
  CHECK_THROWS_AS(plain.result(30s), WorkflowFailed);
  cause_fixed = true;
  CHECK(WorkflowHandle<int>(env.engine.runs().resume(plain.run_id(), ops)).result(30s) == 4);
  std::vector<std::pair<int, std::string>> attempts;
  for (const auto& a : env.engine.runs().history(plain.run_id()).attempts) {
    if (a.activity == "flaky") attempts.emplace_back(a.attempt, a.outcome);
  }
  CHECK(attempts == std::vector<std::pair<int, std::string>>{{1, "failed"}, {2, "completed"}});
}

TEST_CASE_METHOD(RunsEngine, "expired idempotency results are forgotten, so their keys run their bodies again",
                 "[pg][runs][idempotency]") {
  CHECK(engine.start_workflow(keyed_once, "first", 1).result(30s) == 2);
  CHECK(engine.start_workflow(keyed_once, "second", 10).result(30s) == 2);  // the key's result
  CHECK(counted_bodies == 1);
  expect_throw<InvalidArgument>(
      [&] {
        runs().expire_idempotency_results(std::chrono::system_clock::now(), {"ops", ""});
      },
      "needs a reason");
  CHECK(runs().expire_idempotency_results(std::chrono::system_clock::now() - 1h, ops) == 0);
  CHECK(db.count("SELECT count(*) FROM {s}.idempotent_results") == 1);
  // The database clock decides what is older than the cutoff; a minute ahead covers any skew.
  CHECK(runs().expire_idempotency_results(std::chrono::system_clock::now() + 1min, ops) == 1);
  CHECK(db.count("SELECT count(*) FROM {s}.idempotent_results") == 0);
  CHECK(engine.start_workflow(keyed_once, "third", 20).result(30s) == 21);
  CHECK(counted_bodies == 2);
  const auto audit = runs().audit();
  REQUIRE(audit.size() == 2);
  CHECK(audit[0].action == "expire_idempotency_results");
  CHECK(audit[0].details["results"] == 1);
  CHECK(audit[1].details["results"] == 0);
}

TEST_CASE_METHOD(RunsEngine,
                 "hostile management input gets a typed error naming the value and the rule, and writes nothing",
                 "[pg][runs][bad-input]") {
  auto done = engine.start_workflow<HelloWorkflow>("done", "x");
  REQUIRE(done.result(30s) == "hello, x");
  const long long before = rows();
  // A step number from a parser wider than int (a console's query string) is checked, not narrowed.
  const std::int64_t beyond = 4294967297;  // 2^32 + 1: as an int, step 1
  expect_throw<InvalidArgument>([&] { runs().fork(done.run_id(), beyond, ops); }, "step 4294967297",
                                "0 (start over) to 1");
  expect_throw<InvalidArgument>([&] { runs().fork(done.run_id(), -beyond, ops); }, "step -4294967297");
  expect_throw<InvalidArgument>([&] { runs().history(done.run_id(), {.from_seq = beyond}); }, "from_seq 4294967297");
  // Cursors: more digits than a time in microseconds has, or a time PostgreSQL cannot hold.
  const RunId run = done.run_id();
  for (const std::string us : {"9999999999999999999", "9223372036854775807", "99999999999999999"}) {
    expect_throw<InvalidArgument>([&] { runs().list({.cursor = us + "." + run.str()}); }, "cursor '" + us, "malformed");
  }
  // Text PostgreSQL cannot store is refused by name, not by the database.
  expect_throw<InvalidWorkflowId>([&] { runs().latest("bad-\xff"); }, "not valid UTF-8");
  expect_throw<InvalidWorkflowId>([&] { engine.start_workflow<HelloWorkflow>("bad-\xff", "x"); }, "not valid UTF-8");
  expect_throw<InvalidArgument>([&] { runs().list({.filter = {.id_prefix = "\xfe"}}); }, "id prefix", "UTF-8");
  expect_throw<InvalidArgument>([&] { runs().list({.filter = {.workflow_name = "\xfe"}}); }, "workflow name", "UTF-8");
  expect_throw<InvalidArgument>([&] { runs().remove(run, {"ops", "bad \xc3("}); }, "reason", "not valid UTF-8");
  expect_throw<InvalidArgument>([&] { runs().remove(run, {"\xff", "why"}); }, "actor", "not valid UTF-8");
  CHECK(rows() == before);
}

TEST_CASE_METHOD(RunsEngine, "a statement the database refuses keeps its SQLSTATE", "[pg][runs][bad-input]") {
  auto done = engine.start_workflow<HelloWorkflow>("done", "x");
  REQUIRE(done.result(30s) == "hello, x");
  pqxx::connection conn(db.url());
  pqxx::work tx(conn);
  tx.exec(test_sql(R"(
CREATE FUNCTION {s}.refuse() RETURNS trigger LANGUAGE plpgsql
  AS $$ BEGIN RAISE EXCEPTION 'audit is closed' USING ERRCODE = 'DU001'; END $$;
CREATE TRIGGER refuse BEFORE INSERT ON {s}.audit FOR EACH ROW EXECUTE FUNCTION {s}.refuse();
)",
                   "\"" + db.schema() + "\""));
  tx.commit();
  const auto refused = expect_throw<DatabaseRefused>([&] { runs().remove(done.run_id(), ops); }, "audit is closed");
  CHECK(refused.sqlstate() == "DU001");
  CHECK(db.count("SELECT count(*) FROM {s}.workflows") == 1);
}
