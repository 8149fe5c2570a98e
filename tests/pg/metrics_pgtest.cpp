#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>

#include "support/expect.hpp"
#include "support/test_db.hpp"
#include "support/test_workflows.hpp"

using namespace durable;
using namespace durable::test;

namespace {

// Calls `boom` with two attempts and no delay: one retry, then a failure the workflow catches.
const WorkflowRef<std::string, bool> retry_then_fail{"retry_then_fail"};

void register_retry_then_fail(Engine& engine) {
  engine.add_workflow(retry_then_fail, [](WorkflowContext& ctx, const std::string& why) {
    try {
      ctx.call<BoomActivity>(why, {.retry = RetryPolicy{.max_attempts = 2, .base = 0ms}});
      return false;
    } catch (const ActivityFailed&) {
      return true;
    }
  });
}

// `n` steps in a row, each adding one: a chain that would keep its slot to the end if nothing stopped it.
const WorkflowRef<int, int> long_chain{"long_chain"};
void add_long_chain(Engine& engine) {
  engine.add_workflow(long_chain, [](WorkflowContext& ctx, const int& n) {
    int x = 0;
    for (int i = 0; i < n; ++i) x = ctx.call<AddActivity>(Pair{x, 1});
    return x;
  });
}

// `count` chain runs on an engine of their own, to their results; the engine's sessions end with it.
void run_chains(Engine& engine, const std::string& prefix, int count) {
  std::vector<WorkflowHandle<int>> runs;
  for (int i = 0; i < count; ++i) runs.push_back(engine.start_workflow<ChainWorkflow>(prefix + std::to_string(i), i));
  for (int i = 0; i < count; ++i) CHECK(runs[static_cast<std::size_t>(i)].result(30s) == i + 5);
}

void run_chains(TestDb& db, const std::string& prefix, int count) {
  Engine engine(db.options());
  register_all(engine);
  engine.start();
  run_chains(engine, prefix, count);
}

// Another service shares the schema: 5,000 runnable runs of its workflow, and 5,000 of its
// activity's tasks running under live leases. Nothing here serves them.
void add_backlog_elsewhere(TestDb& db) {
  db.query(
      "INSERT INTO {s}.workflows (workflow_id, run_id, name, status, input, next_seq, runnable) "
      "SELECT 'elsewhere-' || g, md5('elsewhere-' || g)::uuid, 'served_elsewhere', 'running', '0', 2, true "
      "FROM generate_series(1, 5000) AS g; "
      "INSERT INTO {s}.tasks (run_id, workflow_id, step, name, input, options, status, attempt, available_at, "
      "                       lease_token, lease_owner, attempt_started_at, first_started_at, lease_until) "
      "SELECT md5('elsewhere-' || g)::uuid, 'elsewhere-' || g, 0, 'served_elsewhere', '0', '{{}}', 'running', 1, "
      "now(), g, 'elsewhere', now(), now(), now() + interval '1 hour' "
      "FROM generate_series(1, 5000) AS g");
}

// Index entries read, over the indexes of the tables a step touches.
long long index_entries_read(TestDb& db) {
  return db.count("SELECT coalesce(sum(idx_tup_read), 0) FROM pg_stat_user_indexes WHERE schemaname = '" + db.schema() +
                  "' AND relname IN ('workflows', 'tasks')");
}

}  // namespace

TEST_CASE("each named instance gets its own activity concurrency, or the global default", "[pg][metrics][dispatcher]") {
  TestDb db;
  EngineOptions options = db.options();
  options.activity_max_concurrency = 7;
  options.instance_activity_concurrency = {{"reports", 3}};
  options.instance = "reports";
  Engine reports(options);
  options.instance = "billing";
  Engine billing(options);
  CHECK(reports.metrics().activity_capacity == 3);
  CHECK(billing.metrics().activity_capacity == 7);
  CHECK(reports.metrics().instance == "reports");
  CHECK(billing.metrics().schema == db.schema());
}

TEST_CASE("bad instance settings are refused with a typed error", "[pg][metrics][bad-input]") {
  TestDb db;
  EngineOptions options = db.options();
  options.instance_activity_concurrency = {{"reports", 0}};
  expect_throw<InvalidOptions>([&] { Engine engine(options); }, "instance_activity_concurrency[\"reports\"] = 0",
                               ">= 1");
  options.instance_activity_concurrency = {};
  for (const std::string& bad :
       std::vector<std::string>{"", "has space", "semi;colon", std::string(64, 'x'), std::string("nul\0", 4)}) {
    options.instance = bad;
    expect_throw<InvalidOptions>([&] { Engine engine(options); }, "EngineOptions::instance", "63 characters");
  }
}

TEST_CASE("a saturated dispatcher claims no more than its free slots and counts rejected claims",
          "[pg][metrics][dispatcher]") {
  RunningEngine env([](EngineOptions& o) {
    o.instance = "narrow";
    o.instance_activity_concurrency = {{"narrow", 2}};
  });
  auto& engine = env.engine;
  auto& db = env.db;
  const auto idle = engine.metrics();
  CHECK(idle.activity_busy == 0);
  CHECK(idle.saturation == 0.0);
  REQUIRE(idle.queue_age_seconds.has_value());
  CHECK(*idle.queue_age_seconds == 0.0);

  auto run = engine.start_workflow<ParallelSlowWorkflow>("six-slow", 6);  // 6 x 300 ms on 2 slots
  int most_busy = 0;
  double oldest_wait = 0;
  bool saw_full = false;
  while (run.status() == WorkflowStatus::running) {
    const auto m = engine.metrics();
    most_busy = std::max(most_busy, m.activity_busy);
    saw_full = saw_full || m.saturation == 1.0;
    oldest_wait = std::max(oldest_wait, m.queue_age_seconds.value_or(0));
    // The database agrees: never more leased at once than twice the slots (a body's slot runs
    // another body while its outcome commits).
    CHECK(db.count("SELECT count(*) FROM {s}.tasks WHERE status = 'running'") <= 4);
    std::this_thread::sleep_for(20ms);
  }
  CHECK(run.result(30s) == 1800);
  CHECK(most_busy == 2);
  CHECK(saw_full);
  CHECK(oldest_wait >= 0.2);  // the last two tasks waited about 600 ms for a slot

  const auto done = settled_metrics(engine, 1);
  CHECK(done.rejected_claims > 0);
  CHECK(done.claims == 6);
  CHECK(done.completions == 6);
  CHECK(done.failures == 0);
  CHECK(done.activity_busy == 0);
  CHECK(*done.queue_age_seconds == 0.0);
  CHECK(done.workflows_completed == 1);
  CHECK(done.replays >= 2);
  CHECK(done.claim_latency.count > 0);
  CHECK(done.replay_latency.count == done.replays);
}

TEST_CASE("the workflow queue age is how long the oldest claimable workflow has waited for a runner", "[pg][metrics]") {
  TestDb db;
  Engine client(db.options());  // never started: the runs it starts wait for any runner
  register_all(client);
  client.start_workflow<StepsWorkflow>("waiting", StepsInput{});
  std::this_thread::sleep_for(300ms);
  const auto waiting = client.metrics();
  REQUIRE(waiting.workflow_queue_age_seconds.has_value());
  CHECK(*waiting.workflow_queue_age_seconds >= 0.25);
  CHECK(*waiting.workflow_queue_age_seconds < 30);
  CHECK(*waiting.queue_age_seconds == 0.0);  // no activity task waits

  {
    Engine runner(db.options());
    register_all(runner);
    runner.start();
    CHECK(runner.workflow<StepsWorkflow>("waiting").result(30s) == 0);
    // A run sleeping on a timer is not claimable until the timer is due.
    runner.start_workflow<SleepWorkflow>("sleeper", 60'000);
    REQUIRE(wait_until([&] { return db.count("SELECT count(*) FROM {s}.workflows WHERE wake_at IS NOT NULL") == 1; }));
    CHECK(*runner.metrics().workflow_queue_age_seconds == 0.0);
  }
  // No runner now; the timer came due 10 s ago by the database's clock.
  testing::advance_clock(db.url(), db.schema(), 70s);
  const auto due = client.metrics();
  CHECK(*due.workflow_queue_age_seconds >= 10);
  CHECK(*due.workflow_queue_age_seconds < 40);
}

TEST_CASE("retries and failures are counted", "[pg][metrics]") {
  TestDb db;
  Engine engine(db.options());
  register_all(engine);
  register_retry_then_fail(engine);
  engine.start();
  CHECK(engine.start_workflow(retry_then_fail, "retry-then-fail", "card declined").result(30s));
  const auto m = settled_metrics(engine, 1);
  CHECK(m.claims == 2);
  CHECK(m.retries == 1);
  CHECK(m.failures == 1);
  CHECK(m.completions == 0);
  CHECK(m.lease_expiries == 0);
  CHECK(m.workflows_completed == 1);
  CHECK(m.workflows_failed == 0);
}

TEST_CASE("a task taken over after its lease ran out counts as a lease expiry", "[pg][metrics]") {
  TestDb db;
  EngineOptions options = db.options();
  options.instance = "first";
  options.instance_activity_concurrency = {{"first", 1}};  // busy with the body: it cannot take the task back
  Engine first(options);
  register_all(first);
  first.start();
  // Long enough that the second engine claims the task while the body still holds the only slot,
  // even on a machine slowed by other work.
  auto run = first.start_workflow<SlowWorkflow>("taken-over", 5000);
  REQUIRE(wait_until([&] { return db.count("SELECT count(*) FROM {s}.tasks WHERE status = 'running'") == 1; }));
  // As if the first engine had hung: its lease is over.
  db.query("UPDATE {s}.tasks SET lease_until = now() - interval '1 s'");

  options.instance = "second";
  Engine second(options);
  register_all(second);
  second.start();
  // Its one attempt was lost: the task fails for good, without running again.
  CHECK(wait_until([&] { return run.status() == WorkflowStatus::failed; }));
  const auto m = settled_metrics(second, 0);  // either engine may replay the failed run
  CHECK(m.lease_expiries == 1);
  CHECK(m.claims == 1);
  CHECK(m.failures == 1);
  CHECK(first.metrics().lease_expiries == 0);
  CHECK(db.count("SELECT count(*) FROM {s}.attempts WHERE outcome = 'lease_expired'") == 1);
}

TEST_CASE("a sequential workflow on one engine runs its steps at once, each committed exactly once",
          "[pg][metrics][fast-path]") {
  RunningEngine env;
  auto& db = env.db;
  CHECK(env.engine.start_workflow<ChainWorkflow>("chain-fast", 10).result(30s) == 15);
  const auto m = settled_metrics(env.engine, 1);
  // Each task is leased by the replay that scheduled it: an idle claim loop probes with one slot
  // and leaves the others free for that.
  CHECK(m.claims == 5);
  CHECK(m.run_at_once == 5);
  CHECK(m.completions == 5);
  CHECK(m.workflows_completed == 1);
  // Whichever path committed them, the journal holds each outcome once, gap-free.
  CHECK(db.count(
            "SELECT count(*) FROM {journal} jw WHERE workflow_id = 'chain-fast' AND kind = 'activity_completed'") == 5);
  CHECK(db.count("SELECT count(DISTINCT step) FROM {journal} jw WHERE workflow_id = 'chain-fast' "
                 "AND kind = 'activity_completed'") == 5);
  CHECK(db.count("SELECT max(seq) + 1 - count(*) FROM {journal} jw WHERE workflow_id = 'chain-fast'") == 0);
  CHECK(db.count("SELECT count(*) FROM {completed} c WHERE workflow_id = 'chain-fast' AND attempt = 1") == 5);
}

TEST_CASE("a long chain of steps passes its slot on a bounded number of times, so queued tasks still run",
          "[pg][metrics][fast-path][dispatcher]") {
  RunningEngine env([](EngineOptions& o) { o.activity_max_concurrency = 1; }, add_long_chain);
  auto& db = env.db;
  auto chain = env.engine.start_workflow(long_chain, "long-chain", 150);
  REQUIRE(
      wait_until([&] { return db.count("SELECT count(*) FROM {completed} c WHERE workflow_id = 'long-chain'") >= 3; }));
  // The one slot goes from step to step of the chain; the hello task waits in the queue for it.
  auto hello = env.engine.start_workflow<HelloWorkflow>("queued-hello", "queue");
  CHECK(hello.result(30s) == "hello, queue");
  CHECK(chain.result(60s) == 150);
  // It ran while the chain was still going: after at most max_slot_handovers more steps.
  const auto steps_before_hello = db.count(
      "SELECT count(*) FROM {completed} c, {completed} h WHERE c.workflow_id = 'long-chain' "
      "AND h.workflow_id = 'queued-hello' AND c.attempt_started_at < h.attempt_started_at");
  CHECK(steps_before_hello < 3 + 32 + 2);
  CHECK(db.count("SELECT count(*) FROM {completed} c WHERE workflow_id = 'long-chain' AND attempt = 1") == 150);
}

TEST_CASE("an engine that claims a task of a workflow replayed elsewhere continues that workflow in place",
          "[pg][fast-path]") {
  TestDb db;
  // The replaying engine's one slot is held by a gated activity, so each run it replays leaves
  // its first task pending, for any engine to claim.
  static std::atomic<bool> gate_open{false};
  gate_open = false;
  // A failed REQUIRE must not leave the gate shut: the replayer's stop would wait for it for good.
  struct OpenGateOnExit {
    ~OpenGateOnExit() { gate_open = true; }
  };
  const ActivityRef<int, int> gate{"gate"};
  const WorkflowRef<int, int> gated{"gated"};
  EngineOptions one_slot = db.options();
  one_slot.activity_max_concurrency = 1;
  Engine replayer(one_slot);
  register_all(replayer);
  replayer.add_activity(gate, [](ActivityContext&, const int& x) {
    while (!gate_open) std::this_thread::sleep_for(5ms);
    return x;
  });
  replayer.add_workflow(gated, [&gate](WorkflowContext& ctx, const int& x) { return ctx.call(gate, x); });
  OpenGateOnExit open_gate_on_exit;  // declared after the replayer: runs before its destructor
  replayer.start();
  auto holder = replayer.start_workflow(gated, "holder", 7);
  REQUIRE(wait_until([&] { return db.count("SELECT count(*) FROM {s}.tasks WHERE status = 'running'") == 1; }));
  for (int i = 0; i < 5; ++i) replayer.start_workflow<ChainWorkflow>("elsewhere-" + std::to_string(i), i);
  // Each stays pending: the one slot is the gate's, from its launch on (a run replayed in the
  // moment between the gate's launch and its body's start once leased its task at once, to wait
  // behind the gate). On failure, say where the tasks are.
  const bool five_pending =
      wait_until([&] { return db.count("SELECT count(*) FROM {s}.tasks WHERE status = 'pending'") == 5; }, 20s);
  if (!five_pending) {
    for (const auto& row : db.query("SELECT workflow_id, step, status, lease_owner, lease_until FROM {s}.tasks")) {
      UNSCOPED_INFO(row[0].c_str() << " step " << row[1].c_str() << ": " << row[2].c_str() << " owner "
                                   << row[3].c_str() << " until " << row[4].c_str());
    }
    for (const auto& row : db.query("SELECT workflow_id, status, runnable, lease_owner FROM {s}.workflows")) {
      UNSCOPED_INFO("run " << row[0].c_str() << ": " << row[1].c_str() << " runnable " << row[2].c_str() << " owner "
                           << row[3].c_str());
    }
  }
  REQUIRE(five_pending);

  // This engine has none of their journals. It claims the five tasks and reads each journal as it
  // finishes one, so every later step goes on in place: no run is made runnable and claimed again.
  Engine engine(db.options());
  register_all(engine);
  engine.start();
  for (int i = 0; i < 5; ++i) {
    CHECK(engine.workflow<ChainWorkflow>("elsewhere-" + std::to_string(i)).result(30s) == i + 5);
  }
  const auto m = settled_metrics(engine, 5);
  CHECK(m.claims == 25);             // five steps of five runs, each run here once
  CHECK(m.run_at_once == 20);        // all but the first of each run, without a claim
  CHECK(m.claim_latency.count < 5);  // claims that took work: the five tasks, at once or in a few; no run
  gate_open = true;
  CHECK(holder.result(30s) == 7);
}

TEST_CASE("a runner claims runnable workflows in batches, up to one for each of its threads", "[pg][fast-path]") {
  TestDb db;
  Engine client(db.options());  // never started: the runs it starts wait for any runner to claim them
  register_all(client);
  const int runs = 40;
  for (int i = 0; i < runs; ++i) client.start_workflow<StepsWorkflow>("batch-" + std::to_string(i), StepsInput{});
  EngineOptions four_threads = db.options();
  four_threads.workflow_max_concurrency = 4;
  Engine engine(four_threads);
  register_all(engine);
  engine.start();
  const auto m = settled_metrics(engine, runs);
  CHECK(m.workflows_completed == runs);  // each ends in its first replay: no task, no task claim
  // Forty claims when each takes one run; about ten when each takes one per runner thread.
  CHECK(m.claim_latency.count < runs / 2);
}

TEST_CASE("a step waiting for its commit holds no body slot, so every slot still runs a body",
          "[pg][fast-path][dispatcher]") {
  // A body that waits for the test to open the gate, and counts the bodies that got a slot.
  static std::atomic<bool> gate_open{false};
  static std::atomic<int> entered{0};
  gate_open = false;
  entered = 0;
  static const ActivityRef<int, int> gate{"gate"};
  const WorkflowRef<int, int> gated{"gated"};
  RunningEngine env([](EngineOptions& o) { o.activity_max_concurrency = 2; },
                    [&](Engine& engine) {
                      engine.add_activity(gate, [](ActivityContext&, const int& x) {
                        ++entered;
                        while (!gate_open) std::this_thread::sleep_for(5ms);
                        return x;
                      });
                      engine.add_workflow(gated, [](WorkflowContext& ctx, const int& x) {
                        return ctx.call(gate, x) + ctx.call<AddActivity>(Pair{x, 0});
                      });
                    });
  auto& db = env.db;
  auto first = env.engine.start_workflow(gated, "first", 1);
  REQUIRE(wait_until([&] { return entered == 1; }));
  // Hold the first run's row, so the commit of its first step (which continues it in place) waits.
  pqxx::connection locker(db.url());
  pqxx::work hold(locker);
  hold.exec_params("SELECT 1 FROM " + pqxx::connection(db.url()).quote_name(db.schema()) +
                       ".workflows WHERE workflow_id = $1 FOR UPDATE",
                   "first");
  gate_open = true;
  REQUIRE(wait_until([&] {
    return db.count("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND position('" +
                    db.schema() + "' in query) > 0") == 1;
  }));
  // Its body returned: both slots run new bodies while the first step's outcome still waits.
  auto second = env.engine.start_workflow(gated, "second", 2);
  auto third = env.engine.start_workflow(gated, "third", 3);
  CHECK(wait_until([&] { return entered == 3; }, 5s));
  hold.abort();
  CHECK(first.result(30s) == 2);
  CHECK(second.result(30s) == 4);
  CHECK(third.result(30s) == 6);
}

TEST_CASE("the engine's statements find rows by index, never by reading a whole table", "[pg][fast-path]") {
  TestDb db;
  // The tables a run touches. Their plans are made while they are small: a plan that scanned one
  // of them whole would cost a step more with every row the table grows by.
  const std::string tables = "('workflows', 'tasks', 'journal', 'attempts', 'audit')";
  auto sum = [&](const char* column) {
    return db.count(
        fmt::format("SELECT coalesce(sum({}), 0) FROM pg_stat_user_tables WHERE schemaname = '{}' "
                    "AND relname IN {}",
                    column, db.schema(), tables));
  };
  {
    Engine migrates(db.options());  // building indexes reads their tables whole: not counted
    migrates.start();
  }
  // Sessions report their counters as they end.
  REQUIRE(wait_until([&] { return sum("seq_scan") > 0; }));
  std::this_thread::sleep_for(300ms);
  const long long seq_before = sum("seq_scan"), idx_before = sum("idx_scan");
  run_chains(db, "by-index-", 20);
  {
    // Runs as first-class: a new run of an ended id, a run found by its run id, a cancel.
    Engine engine(db.options());
    register_all(engine);
    engine.start();
    const RunId old_run = engine.workflow("by-index-0").run_id();
    auto again = engine.start_workflow<ChainWorkflow>("by-index-0", 1, {.id_reuse = IdReusePolicy::allow_if_ended});
    CHECK(again.result(30s) == 6);
    CHECK(engine.workflow_run(old_run).status() == WorkflowStatus::completed);
    auto nap = engine.start_workflow<SleepWorkflow>("by-index-nap", 3600 * 1000);
    CHECK(nap.cancel());
  }
  REQUIRE(wait_until([&] { return sum("idx_scan") > idx_before; }));
  std::this_thread::sleep_for(300ms);
  CHECK(sum("seq_scan") - seq_before == 0);
}

TEST_CASE("claims and steps never read another service's backlog of runnable runs and running tasks",
          "[pg][fast-path]") {
  TestDb db;
  {
    Engine migrates(db.options());
    migrates.start();
  }
  add_backlog_elsewhere(db);
  const long long before = index_entries_read(db);
  run_chains(db, "mine-", 10);
  // Sessions report their counters as they end.
  REQUIRE(wait_until([&] { return index_entries_read(db) > before; }));
  std::this_thread::sleep_for(300ms);
  // Fifty steps and their claims read a few entries each; one read of the backlog is 5,000.
  CHECK(index_entries_read(db) - before < 2000);
}

TEST_CASE("steps find their run by its key also with plans made while the tables were small", "[pg][fast-path]") {
  TestDb db;
  long long before = 0;
  {
    Engine engine(db.options());
    register_all(engine);
    engine.start();
    // The engine's prepared statements make their plans now, on nearly empty tables, and keep
    // them: a plan that found a run by its status (workflows_listed_by_status) rather than its
    // run id would walk every running run once the tables have grown.
    run_chains(engine, "early-", 10);
    add_backlog_elsewhere(db);
    before = index_entries_read(db);
    run_chains(engine, "later-", 10);
  }
  REQUIRE(wait_until([&] { return index_entries_read(db) > before; }));
  std::this_thread::sleep_for(300ms);
  CHECK(index_entries_read(db) - before < 2000);
}

TEST_CASE("short steps of many workflows go on in batches of all of them, not in alternating halves",
          "[pg][metrics][fast-path]") {
  RunningEngine env({}, add_long_chain);  // ten slots
  // Ten runs of thirty steps on ten slots. After a batch commits, its steps' next activities run
  // at once and are back within a fraction of a batch's time: the next batch waits for them.
  std::vector<WorkflowHandle<int>> runs;
  for (int i = 0; i < 10; ++i) runs.push_back(env.engine.start_workflow(long_chain, "chain-" + std::to_string(i), 30));
  for (auto& run : runs) CHECK(run.result(60s) == 30);
  const auto m = settled_metrics(env.engine, 10);
  CHECK(m.completions == 300);
  // About 30 statements in batches of all ten; about 60 when the steps split into two halves that
  // take turns (each half finishing while the other is in the database). Timing, so checked in the
  // plain build only: under AddressSanitizer, bodies, replays and commits are several times
  // slower, and e7c74f4 measured 45 to 53 there on the 2-core machine (4 runs out of 4 over 44).
#ifndef __SANITIZE_ADDRESS__
  CHECK(m.outcome_commits < 45);
#endif
}

TEST_CASE("activities that finish together commit their outcomes in groups, each once", "[pg][metrics][fast-path]") {
  TestDb db;
  Engine engine(db.options());  // ten activity slots
  // Twenty one-step runs on ten slots, in two waves: the last body of a wave to arrive lets the
  // wave's ten return at once (bodies that merely slept alike ended too far apart on a loaded
  // machine for their outcomes to meet).
  struct Waves {
    std::mutex mutex;
    std::condition_variable arrived_cv;
    int arrived = 0;
  } waves;
  const ActivityRef<int, int> together{"together"};
  const WorkflowRef<int, int> grouped{"grouped"};
  engine.add_activity(together, [&waves](ActivityContext&, const int& n) {
    std::unique_lock lock(waves.mutex);
    const int wave_end = (waves.arrived++ / 10 + 1) * 10;
    waves.arrived_cv.notify_all();
    waves.arrived_cv.wait_for(lock, 20s, [&] { return waves.arrived >= wave_end; });
    return n;
  });
  engine.add_workflow(grouped, [together](WorkflowContext& ctx, const int& n) { return ctx.call(together, n); });
  engine.start();
  std::vector<WorkflowHandle<int>> runs;
  for (int i = 0; i < 20; ++i) runs.push_back(engine.start_workflow(grouped, "group-" + std::to_string(i), i));
  for (int i = 0; i < 20; ++i) CHECK(runs[static_cast<std::size_t>(i)].result(30s) == i);
  const auto m = settled_metrics(engine, 20);
  CHECK(m.completions == 20);
  CHECK(m.outcome_commits < m.completions);  // grouped: fewer statements than outcomes
  CHECK(m.outcome_commits > 0);
  // Grouped or not, each outcome is journaled once and each journal stays gap-free.
  CHECK(db.count("SELECT count(*) FROM {s}.journal_events WHERE kind = 'activity_completed'") == 20);
  CHECK(db.count("SELECT count(*) FROM (SELECT run_id FROM {s}.journal_events GROUP BY run_id "
                 "HAVING max(seq) + 1 <> count(*)) AS gaps") == 0);
  CHECK(db.count("SELECT count(*) FROM {s}.tasks") == 0);     // a completed task's row goes with its commit
  CHECK(db.count("SELECT count(*) FROM {s}.attempts") == 0);  // a successful attempt is in its completed event
}
