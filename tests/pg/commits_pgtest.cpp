// How many commits a run takes (issue 39): a run started on an engine that runs its workflow
// commits its start and its first replay's decisions together, and the paths around that commit
// (a first step that needs a read, a run that ends at once, a lost answer, a start elsewhere).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>

#include "base/failpoint.hpp"
#include "support/expect.hpp"
#include "support/test_db.hpp"
#include "support/test_workflows.hpp"

using namespace durable;
using namespace durable::test;

namespace {

// Ends in its first replay: no step at all.
struct Doubles {
  static constexpr auto name = "doubles";
  int operator()(WorkflowContext&, const int& n) { return 2 * n; }
};

void register_doubles(Engine& engine) { engine.add<Doubles>(); }

// The transactions that wrote the journal rows of `workflow_id`'s runs, in the order of their rows.
long long journal_commits(const TestDb& db, const std::string& workflow_id) {
  return db.count(
      "SELECT count(DISTINCT j.xmin::text) FROM {s}.journal j JOIN {s}.workflows w USING (run_id) "
      "WHERE w.workflow_id = '" +
      workflow_id + "'");
}
// Whether the journal rows of seq 0 and 1 of `workflow_id` went in with one commit.
bool first_two_rows_together(const TestDb& db, const std::string& workflow_id) {
  return db.count(
             "SELECT count(DISTINCT j.xmin::text) FROM {s}.journal j JOIN {s}.workflows w USING (run_id) "
             "WHERE w.workflow_id = '" +
             workflow_id + "' AND j.seq IN (0, 1)") == 1;
}

}  // namespace

TEST_CASE("a one-step run started on an engine that runs it takes two commits", "[pg][commits]") {
  RunningEngine env({}, register_doubles);
  CHECK(env.engine.start_workflow<HelloWorkflow>("two-commits", "you").result(30s) == "hello, you");
  // The start with the activity scheduled, then the activity's result with the workflow's end.
  CHECK(first_two_rows_together(env.db, "two-commits"));
  CHECK(journal_commits(env.db, "two-commits") == 2);
  CHECK(events_of(env.db, "two-commits", "activity_scheduled") == 1);
  // A run that ends in its first replay ends in its start's commit.
  CHECK(env.engine.start_workflow<Doubles>("at-once", 21).result(30s) == 42);
  CHECK(journal_commits(env.db, "at-once") == 1);
  CHECK(events_of(env.db, "at-once", "workflow_completed") == 1);
  // A timer first: started with the run, and it fires.
  CHECK(env.engine.start_workflow<SleepWorkflow>("timer-first", 100).result(30s)["slept_ms"].get<int>() >= 100);
  CHECK(first_two_rows_together(env.db, "timer-first"));
}

TEST_CASE("a first step that needs a read is replayed by a runner after the start's commit", "[pg][commits]") {
  RunningEngine env;
  // Its first step is a receive: the inbox is read under a claim, so the start commits alone.
  auto run = env.engine.start_workflow<InboxWorkflow>("reads-first", InboxInput{1, 0});
  env.engine.send("reads-first", "item", std::string("one"));
  CHECK(run.result(30s) == std::vector<std::string>{"one"});
  CHECK_FALSE(first_two_rows_together(env.db, "reads-first"));
}

TEST_CASE("a start from a client that runs no workflows commits the start alone", "[pg][commits]") {
  RunningEngine worker;
  Engine client(worker.db.options());  // never started: it starts runs, another engine runs them
  register_all(client);
  CHECK(client.start_workflow<HelloWorkflow>("started-elsewhere", "there").result(30s) == "hello, there");
  CHECK_FALSE(first_two_rows_together(worker.db, "started-elsewhere"));
  CHECK(journal_commits(worker.db, "started-elsewhere") == 3);
}

TEST_CASE("a start whose answer was lost runs its first step once, without waiting for a lease", "[pg][commits]") {
  // The start and its first replay commit, then the answer is lost: the retry finds the run its
  // own and the task the replay leased at once to this engine, and runs it now. A task left to its
  // lease (35 s: the default timeout and lease margin) would outlast the wait below.
  detail::configure_failpoints("lost_answer.start_workflow=fail@1");
  {
    RunningEngine env;
    auto run = env.engine.start_workflow<HelloWorkflow>("lost-start", "again");
    CHECK(run.result(20s) == "hello, again");
    CHECK(runs_of(env.db, "lost-start") == 1);
    CHECK(events_of(env.db, "lost-start", "activity_completed") == 1);
    CHECK(first_two_rows_together(env.db, "lost-start"));
  }
  detail::configure_failpoints("");
}

TEST_CASE("a start leaves the run's row as a claim and a replay expect it", "[pg][commits]") {
  auto row = [](const TestDb& db, const std::string& id) {
    return db.query(
        "SELECT next_seq, replay_lag, runnable, lease_token IS NULL, wake_at IS NOT NULL, status "
        "FROM {s}.workflows WHERE workflow_id = '" +
        id + "'")[0];
  };
  {
    TestDb db;
    Engine client(db.options());  // never started: the run waits for any engine's claim
    register_all(client);
    client.start_workflow<HelloWorkflow>("waits-for-a-claim", "x");
    auto r = row(db, "waits-for-a-claim");
    CHECK(r[0].as<int>() == 1);  // its start event,
    CHECK(r[1].as<int>() == 1);  // which no replay has seen
    CHECK(r[2].as<bool>());
    CHECK(r[3].as<bool>());
  }
  RunningEngine env;
  env.engine.start_workflow<SleepWorkflow>("sleeps-at-once", 60000);
  auto r = row(env.db, "sleeps-at-once");
  // Started, then what its first replay wrote (the clock it read, its timer), which no replay has
  // read back: all but the start.
  CHECK(r[0].as<int>() == 3);
  CHECK(events_of(env.db, "sleeps-at-once", "timer_started") == 1);
  CHECK(r[1].as<int>() == 2);
  CHECK_FALSE(r[2].as<bool>());
  CHECK(r[3].as<bool>());  // no lease held: it waits for its timer
  CHECK(r[4].as<bool>());
  CHECK(r[5].as<std::string>() == "running");
}

TEST_CASE("a start whose first replay would end the run still meets the deduplication key", "[pg][commits]") {
  RunningEngine env({}, register_doubles);
  // A running run holds the key, waiting for a message.
  env.engine.start_workflow<InboxWorkflow>("holds-the-key", InboxInput{1, 0}, {.deduplication_key = "k"});
  // A run that would complete in its first replay is refused as a duplicate like any other.
  expect_throw<DuplicateStart>(
      [&] { env.engine.start_workflow<Doubles>("would-end-at-once", 1, {.deduplication_key = "k"}); }, "k");
  CHECK(runs_of(env.db, "would-end-at-once") == 0);
}

TEST_CASE("a run started on a named queue wakes the engines that serve it at once", "[pg][commits]") {
  RunningEngine worker(
      [](EngineOptions& o) {
        o.queues = {"default", "narrow"};
        o.poll_interval = std::chrono::seconds{30};  // an admission found by polling would take this long
      },
      [](Engine& e) {
        e.add_queue({"narrow", 2, std::nullopt});
      });
  Engine client(worker.db.options());  // never started: its start goes in unleased, queued
  register_all(client);
  const auto started = std::chrono::steady_clock::now();
  auto run = client.start_workflow<HelloWorkflow>("queued-start", "q", {.queue = "narrow"});
  CHECK(run.result(60s) == "hello, q");
  CHECK(std::chrono::steady_clock::now() - started < 10s);
}

TEST_CASE("a handle made from a run id spelled otherwise hears its run end", "[pg][commits]") {
  RunningEngine env([](EngineOptions& o) { o.poll_interval = std::chrono::seconds{30}; });
  auto first = env.engine.start_workflow<ParallelSlowWorkflow>("spelled", 1);  // one 300 ms activity
  std::string upper = first.run_id().str();
  std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return std::toupper(c); });
  auto found = env.engine.workflow_run<ParallelSlowWorkflow>(RunId{upper});
  const auto started = std::chrono::steady_clock::now();
  CHECK(found.result(60s) == 300);
  CHECK(std::chrono::steady_clock::now() - started < 10s);
}
