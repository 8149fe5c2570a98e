// Activities on named queues (ActivityOptions::queue): attempt limits that hold across engines
// and crashes, keys that take turns, priorities, rates, pause, dedicated pools, and bad input.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <algorithm>
#include <atomic>
#include <csignal>
#include <map>
#include <thread>
#include <vector>

#include "support/most_sampler.hpp"
#include "support/test_db.hpp"
#include "support/test_workflows.hpp"
#include "support/workers.hpp"

using namespace durable;
using namespace durable::test;
using namespace std::chrono_literals;

namespace {

// The most running attempts of a queue ever seen at once, in total and per key.
MostSampler running_sampler(const TestDb& db, const std::string& queue) {
  return MostSampler(db, "SELECT concurrency_key, count(*) FROM \"" + db.schema() + "\".tasks WHERE queue = '" + queue +
                             "' AND status = 'running' GROUP BY concurrency_key");
}

QueuedCallsInput calls_on(const std::string& queue, int calls, int ms, int priority = 0, const std::string& key = {}) {
  return {queue, calls, ms, priority, key};
}

// An engine on the test's schema that serves `queues` (the first defined with `spec`, if given).
std::unique_ptr<Engine> serving(const TestDb& db, std::vector<std::string> queues, const QueueSpec* spec = nullptr) {
  EngineOptions options = db.options();
  options.queues = std::move(queues);
  auto engine = std::make_unique<Engine>(options);
  register_all(*engine);
  if (spec) engine->add_queue(*spec);
  engine->start();
  return engine;
}

long long tasks_waiting(const TestDb& db, const std::string& queue) {
  return db.count("SELECT count(*) FROM {s}.tasks WHERE queue = '" + queue + "' AND status = 'pending'");
}

// Kills the worker processes still running when a test leaves early (a failed REQUIRE).
struct KilledAtExit {
  std::vector<pid_t>& pids;
  ~KilledAtExit() {
    for (pid_t pid : pids) {
      if (waitpid(pid, nullptr, WNOHANG) != 0) continue;  // reaped already
      kill(pid, SIGKILL);
      wait_for(pid);
    }
  }
};

// Activity calls completed, all runs together.
long long calls_completed(const TestDb& db) {
  return db.count("SELECT count(*) FROM {s}.journal_events WHERE kind = 'activity_completed'");
}

// The workflow ids of the runs whose ids start with `prefix`, once per activity call completed, in
// the order the calls completed (on a queue of concurrency 1, the order their attempts started).
std::vector<std::string> completed_in_order(const TestDb& db, const std::string& prefix) {
  std::vector<std::string> ids;
  for (const auto& row : db.query("SELECT w.workflow_id FROM {s}.journal_events e JOIN {s}.workflows w ON w.run_id = "
                                  "e.run_id WHERE e.kind = 'activity_completed' AND w.workflow_id LIKE '" +
                                  prefix + "-%' ORDER BY e.created_at, e.seq")) {
    ids.push_back(row[0].as<std::string>());
  }
  return ids;
}

// Bodies of CountedCall running now in this process, and the most ever at once.
std::atomic<int> counted_now{0}, counted_most{0};

// An activity on queue "one-at-a-time" that never heartbeats: a cancel reaches it only as it returns.
struct CountedCall {
  static constexpr auto name = "counted_call";
  static ActivityOptions options() { return {.queue = "one-at-a-time"}; }
  int operator()(ActivityContext&, const int& ms) const {
    const int now = ++counted_now;
    counted_most = std::max(counted_most.load(), now);
    std::this_thread::sleep_for(std::chrono::milliseconds{ms});
    --counted_now;
    return ms;
  }
};

struct CountedWorkflow {
  static constexpr auto name = "counted";
  int operator()(WorkflowContext& ctx, const int& ms) { return ctx.call<CountedCall>(ms); }
};

}  // namespace

TEST_CASE("activities on a named queue run no more attempts at once than its concurrency", "[queues][activities]") {
  TestDb db;
  const QueueSpec spec{"api", 3, std::nullopt};
  auto engine = serving(db, {"default", "api"}, &spec);
  MostSampler sampler = running_sampler(db, "api");
  std::vector<WorkflowHandle<int>> runs;
  for (int i = 0; i < 4; ++i) {
    runs.push_back(engine->start_workflow<QueuedCallsWorkflow>(fmt::format("api-{}", i), calls_on("api", 4, 100)));
  }
  for (auto& run : runs) CHECK(run.result(30s) == 400);
  sampler.stop();
  CHECK(sampler.samples() > 50);
  CHECK(sampler.most_in_total() == 3);  // never more, and the limit was used
  const QueueInfo info = engine->queues().get("api");
  CHECK(info.activities_running == 0);
  CHECK(info.activities_waiting == 0);
  CHECK(info.running == 0);  // the runs are on the default queue: the queue counts them apart
}

TEST_CASE("attempt limits hold exactly across three engine processes, one of them killed",
          "[queues][activities][process]") {
  TestDb db;
  Engine client(db.options());
  register_all(client);
  client.queues().define({"calls", 4, 2});
  const auto worker = [&] {
    return spawn_program(DURABLE_TEST_WORKER, db.url(), {db.schema(), "serve"}, {"DURABLE_TEST_QUEUES=calls"});
  };
  MostSampler sampler = running_sampler(db, "calls");
  std::vector<pid_t> workers{worker(), worker(), worker()};
  const KilledAtExit cleanup{workers};
  std::vector<WorkflowHandle<int>> runs;
  for (int i = 0; i < 12; ++i) {
    runs.push_back(client.start_workflow<QueuedCallsWorkflow>(
        fmt::format("calls-{:02}", i), calls_on("calls", 4, 100, 0, fmt::format("tenant-{}", i % 4))));
  }
  REQUIRE(wait_until([&] { return calls_completed(db) >= 8; }, 30s));
  kill(workers[0], SIGKILL);  // mid-flight: its running attempts keep their places until taken over
  wait_for(workers[0]);
  // Its leases end now, as they would have run out: the others take its tasks and runs over.
  end_leases_of(db, workers[0]);
  workers[0] = worker();
  for (auto& run : runs) CHECK(run.result(60s) == 400);
  stop_workers(workers);
  check_never_over(sampler, 4, 2, 3);  // and the engines together used the queue
}

TEST_CASE("an activity's key is its run's unless its call names one, and keys take turns", "[queues][activities]") {
  TestDb db;
  const QueueSpec api{"turns", 1, std::nullopt};
  Engine(db.options()).queues().define({"tenants"});  // no limits: it only gives the runs their keys
  auto engine = serving(db, {"default", "tenants", "turns"}, &api);
  engine->queues().pause("turns", {"test", "line the calls up"});
  StartOptions tenant_a;
  tenant_a.queue = "tenants";
  tenant_a.concurrency_key = "a";
  auto a = engine->start_workflow<QueuedCallsWorkflow>("turns-a", calls_on("turns", 6, 20), tenant_a);
  REQUIRE(wait_until([&] { return tasks_waiting(db, "turns") == 6; }, 10s));
  auto b = engine->start_workflow<QueuedCallsWorkflow>("turns-b", calls_on("turns", 2, 20, 0, "b"));
  REQUIRE(wait_until([&] { return tasks_waiting(db, "turns") == 8; }, 10s));
  CHECK(db.count("SELECT count(*) FROM {s}.tasks WHERE queue = 'turns' AND concurrency_key = 'a'") == 6);
  CHECK(db.count("SELECT count(*) FROM {s}.tasks WHERE queue = 'turns' AND concurrency_key = 'b'") == 2);
  engine->queues().resume("turns", {"test", "go"});
  CHECK(a.result(30s) == 120);
  CHECK(b.result(30s) == 40);
  // Oldest first would run all six of a's first. Turns interleave: b's two are among the first four.
  const auto order = completed_in_order(db, "turns");
  REQUIRE(order.size() == 8);
  const auto last_b = std::find(order.rbegin(), order.rend(), "turns-b");
  CHECK(order.rend() - last_b <= 4);
}

TEST_CASE("a higher priority call runs first on its queue, the same priority oldest first", "[queues][activities]") {
  TestDb db;
  const QueueSpec spec{"ranked", 1, std::nullopt};
  auto engine = serving(db, {"default", "ranked"}, &spec);
  engine->queues().pause("ranked", {"test", "line the calls up"});
  auto low = engine->start_workflow<QueuedCallsWorkflow>("ranked-low", calls_on("ranked", 3, 10));
  REQUIRE(wait_until([&] { return tasks_waiting(db, "ranked") == 3; }, 10s));
  auto high = engine->start_workflow<QueuedCallsWorkflow>("ranked-high", calls_on("ranked", 2, 10, 5));
  REQUIRE(wait_until([&] { return tasks_waiting(db, "ranked") == 5; }, 10s));
  engine->queues().resume("ranked", {"test", "go"});
  CHECK(low.result(30s) == 30);
  CHECK(high.result(30s) == 20);
  const auto order = completed_in_order(db, "ranked");
  CHECK(order == std::vector<std::string>{"ranked-high", "ranked-high", "ranked-low", "ranked-low", "ranked-low"});
}

TEST_CASE("with priority aging, a call that waited rises to the highest priority waiting",
          "[queues][activities][aging]") {
  TestDb db;
  QueueSpec spec{"ageing", 1, std::nullopt};
  spec.priority_aging = 400ms;
  auto engine = serving(db, {"default", "ageing"}, &spec);
  engine->queues().pause("ageing", {"test", "line the calls up"});
  auto low = engine->start_workflow<QueuedCallsWorkflow>("ageing-low", calls_on("ageing", 3, 10));
  REQUIRE(wait_until([&] { return tasks_waiting(db, "ageing") == 3; }, 10s));
  std::this_thread::sleep_for(1000ms);  // two steps and more: the low calls rise from 0 to 2
  auto high = engine->start_workflow<QueuedCallsWorkflow>("ageing-high", calls_on("ageing", 2, 10, 2));
  REQUIRE(wait_until([&] { return tasks_waiting(db, "ageing") == 5; }, 10s));
  engine->queues().resume("ageing", {"test", "go"});
  CHECK(low.result(30s) == 30);
  CHECK(high.result(30s) == 20);
  // Risen to 2, the low calls are as high as the high ones and older: they go first (without
  // aging the high ones would, as in the test above).
  const auto order = completed_in_order(db, "ageing");
  CHECK(order == std::vector<std::string>{"ageing-low", "ageing-low", "ageing-low", "ageing-high", "ageing-high"});
}

TEST_CASE("a queue's rate counts attempts started, and the rest wait for the window", "[queues][activities][rate]") {
  TestDb db;
  QueueSpec spec;
  spec.name = "metered-calls";
  spec.rate = RateLimit{4, std::chrono::hours{1}};
  auto engine = serving(db, {"default", "metered-calls"}, &spec);
  auto run = engine->start_workflow<QueuedCallsWorkflow>("metered-calls-0", calls_on("metered-calls", 6, 1));
  REQUIRE(wait_until([&] { return engine->queues().get("metered-calls").activities_waiting == 2; }, 10s));
  std::this_thread::sleep_for(600ms);
  CHECK(calls_completed(db) == 4);
  CHECK(run.status() == WorkflowStatus::running);
  // The window is on the database clock: an hour on, the last two start.
  testing::advance_clock(db.url(), db.schema(), std::chrono::hours{1});
  CHECK(run.result(10s) == 6);
}

TEST_CASE("a paused queue starts no attempt, lets running ones finish, and resumes", "[queues][activities]") {
  TestDb db;
  const QueueSpec spec{"held", 2, std::nullopt};
  auto engine = serving(db, {"default", "held"}, &spec);
  auto run = engine->start_workflow<QueuedCallsWorkflow>("held-0", calls_on("held", 4, 400));
  REQUIRE(wait_until([&] { return engine->queues().get("held").activities_running == 2; }, 10s));
  engine->queues().pause("held", {"oncall", "the API is down"});
  REQUIRE(wait_until([&] { return engine->queues().get("held").activities_waiting == 2; }, 10s));
  std::this_thread::sleep_for(800ms);  // the two running finish; none starts
  const QueueInfo paused = engine->queues().get("held");
  CHECK(paused.activities_running == 0);
  CHECK(paused.activities_waiting == 2);
  CHECK(run.status() == WorkflowStatus::running);
  engine->queues().resume("held", {"oncall", "the API is back"});
  CHECK(run.result(10s) == 1600);
}

TEST_CASE("only engines that serve an activity's queue run it, and none leases it at once", "[queues][activities]") {
  TestDb db;
  const QueueSpec spec{"gpu", 1, std::nullopt};
  auto general = serving(db, {"default"});
  Engine(db.options()).queues().define(spec);
  auto run = general->start_workflow<QueuedCallsWorkflow>("gpu-0", calls_on("gpu", 1, 1));
  REQUIRE(wait_until([&] { return tasks_waiting(db, "gpu") == 1; }, 10s));
  std::this_thread::sleep_for(600ms);  // several polls of an engine that does not serve "gpu"
  CHECK(tasks_waiting(db, "gpu") == 1);
  CHECK(db.count("SELECT attempt FROM {s}.tasks WHERE queue = 'gpu'") == 0);  // never started
  auto pool = serving(db, {"gpu"});  // a dedicated pool: the default queue is left out
  CHECK(run.result(10s) == 1);
  CHECK(calls_completed(db) == 1);
}

TEST_CASE("bad activity queue options fail the run with InvalidOptions and write no task",
          "[queues][activities][bad_input]") {
  TestDb db;
  auto engine = serving(db, {"default"});
  const auto fails = [&](const std::string& id, const QueuedCallsInput& input, const std::string& part) {
    auto run = engine->start_workflow<QueuedCallsWorkflow>(id, input);
    try {
      run.result(30s);
      FAIL("the run should have failed");
    } catch (const WorkflowFailed& e) {
      CHECK(e.error_type() == "durable::InvalidOptions");
      CHECK_THAT(e.what(), Catch::Contains(part));
    }
    CHECK(db.count("SELECT count(*) FROM {s}.tasks WHERE workflow_id = '" + id + "'") == 0);
  };
  fails("bad-name", calls_on("no spaces!", 1, 1), "a queue name is 1 to 63 characters");
  fails("bad-long-name", calls_on(std::string(64, 'q'), 1, 1), "a queue name is 1 to 63 characters");
  fails("bad-key-default", calls_on("default", 1, 1, 0, "tenant-a"), "a key applies on a named queue only");
  fails("bad-key-size", calls_on("api", 1, 1, 0, std::string(256, 'k')), "256 bytes long");
  // A declared queue is checked as the activity is registered.
  Engine declared(db.options());
  const ActivityRef<int, int> echo_int{"declared_bad_queue"};
  ActivityOptions options;
  options.queue = "";
  CHECK_THROWS_AS(declared.add_activity(
                      echo_int, [](ActivityContext&, const int& n) { return n; }, options),
                  InvalidOptions);
}

TEST_CASE("an engine's own bound on a queue holds beside the other engines'", "[queues][activities]") {
  TestDb db;
  const QueueSpec spec{"api", std::nullopt, std::nullopt};
  auto bounded = [&](const std::string& instance) {  // named apart: the lease owner tells them apart
    EngineOptions options = db.options();
    options.instance = instance;
    options.queues = {"default", "api"};
    options.activity_max_concurrency = 4;
    options.queue_activity_concurrency = {{"api", 1}};
    auto engine = std::make_unique<Engine>(options);
    register_all(*engine);
    engine->add_queue(spec);
    engine->start();
    return engine;
  };
  auto first = bounded("first");
  auto second = bounded("second");
  // Per engine (the lease owner), from the tasks table: at most 1 in each, 2 in all.
  MostSampler sampler(db, "SELECT lease_owner, count(*) FROM \"" + db.schema() +
                              "\".tasks WHERE queue = 'api' AND status = 'running' GROUP BY lease_owner");
  std::vector<WorkflowHandle<int>> runs;
  for (int i = 0; i < 4; ++i) {
    runs.push_back(first->start_workflow<QueuedCallsWorkflow>(fmt::format("api-{}", i), calls_on("api", 3, 100)));
  }
  for (auto& run : runs) CHECK(run.result(30s) == 300);
  check_never_over(sampler, 2, 1, 2);
}

TEST_CASE("a key with a weight starts that many attempts in each round", "[queues][activities]") {
  TestDb db;
  QueueSpec spec{"api", 1, std::nullopt};
  spec.key_weights = {{"gold", 3}};
  spec.rate = RateLimit{1000, 60s};         // never binds here: its log keeps the order attempts started in
  auto replays = serving(db, {"default"});  // replays the runs; runs no attempt on "api"
  replays->queues().define(spec);
  auto gold = replays->start_workflow<QueuedCallsWorkflow>("gold", calls_on("api", 8, 5, 0, "gold"));
  auto plain = replays->start_workflow<QueuedCallsWorkflow>("plain", calls_on("api", 8, 5, 0, "plain"));
  REQUIRE(wait_until([&] { return tasks_waiting(db, "api") == 16; }, 10s));
  auto attempts = serving(db, {"api"});  // one attempt at a time, by turns
  CHECK(gold.result(30s) == 40);
  CHECK(plain.result(30s) == 40);
  std::vector<std::string> order;
  for (const auto& row :
       db.query("SELECT concurrency_key FROM {s}.queue_admissions WHERE attempt ORDER BY admitted_at")) {
    order.push_back(row[0].as<std::string>());
  }
  REQUIRE(order.size() == 16);
  // Rounds of three gold attempts to one plain (equal weights alternate).
  CHECK(std::count(order.begin(), order.begin() + 8, "gold") == 6);
}

TEST_CASE("a bad bound of an engine on a queue is refused before the engine runs", "[queues][bad_input]") {
  TestDb db;
  auto refused = [&](std::map<std::string, int> limits, const std::string& says) {
    EngineOptions options = db.options();
    options.queue_activity_concurrency = std::move(limits);
    CHECK_THROWS_AS(Engine(options), InvalidOptions);
    CHECK_THROWS_WITH(Engine(options), Catch::Matchers::Contains(says));
  };
  refused({{"api", 0}}, "must be at least 1");
  refused({{"default", 2}}, "the default queue has no bound of its own");
  refused({{"no spaces", 2}}, "queue_activity_concurrency");
}

TEST_CASE("a paused activity type starts no attempt in any engine process until it is resumed",
          "[queues][paused_types][process]") {
  TestDb db;
  Engine client(db.options());
  register_all(client);
  std::vector<pid_t> workers{spawn_program(DURABLE_TEST_WORKER, db.url(), {db.schema(), "serve"})};
  const KilledAtExit cleanup{workers};
  CHECK(client.start_workflow<SlowWorkflow>("warm", 1).result(20s) == 1);  // the worker serves
  auto held_attempts = [&] {
    return db.count("SELECT count(*) FROM {s}.tasks WHERE workflow_id LIKE 'held-%' AND attempt > 0");
  };
  // Paused from a process that runs nothing: the worker hears of it (NOTIFY) and re-reads.
  client.queues().pause_activity("slow", {"oncall", "the downstream is failing"});
  std::this_thread::sleep_for(300ms);
  std::vector<WorkflowHandle<int>> runs;
  for (int i = 0; i < 3; ++i) runs.push_back(client.start_workflow<SlowWorkflow>(fmt::format("held-{}", i), 5));
  // The worker replays the runs (their workflow is not paused): their calls wait, never leased.
  REQUIRE(wait_until([&] { return db.count("SELECT count(*) FROM {s}.tasks WHERE status = 'pending'") == 3; }, 20s));
  std::this_thread::sleep_for(700ms);  // a few of the worker's polls
  CHECK(held_attempts() == 0);
  // A worker that starts while it is paused reads the pause before its first claim.
  kill(workers[0], SIGKILL);
  wait_for(workers[0]);
  workers[0] = spawn_program(DURABLE_TEST_WORKER, db.url(), {db.schema(), "serve"});
  const std::string new_owner = fmt::format("%:{}", workers[0]);
  REQUIRE(wait_until(
      [&] { return db.count("SELECT count(*) FROM {s}.engines WHERE owner LIKE '" + new_owner + "'") == 1; }, 20s));
  std::this_thread::sleep_for(700ms);
  CHECK(held_attempts() == 0);
  const auto paused = client.queues().paused_types();
  REQUIRE(paused.size() == 1);
  CHECK(paused[0].kind == TypeKind::activity);
  CHECK(paused[0].name == "slow");
  CHECK(paused[0].paused_by == "oncall");
  CHECK(paused[0].paused_reason == "the downstream is failing");
  CHECK(client.queues().resume_activity("slow", {"oncall", "the downstream is back"}));
  for (auto& run : runs) CHECK(run.result(20s) == 5);
  CHECK_FALSE(client.queues().resume_activity("slow", {"oncall", "again"}));  // not paused: nothing written
  CHECK(db.count("SELECT count(*) FROM {s}.audit WHERE action IN ('activity_type_pause', 'activity_type_resume') AND "
                 "details->>'activity' = 'slow'") == 2);
  kill(workers[0], SIGTERM);
  wait_for(workers[0]);
}

TEST_CASE("an engine hears of a pause made elsewhere before its next poll", "[queues][paused_types]") {
  TestDb db;
  EngineOptions options = db.options();
  options.poll_interval = 10s;  // longer than the test: only the announcement can tell it
  Engine engine(options);
  register_all(engine);
  engine.start();
  CHECK(engine.start_workflow<SlowWorkflow>("warm", 1).result(10s) == 1);
  Engine client(db.options());
  client.queues().pause_activity("slow", {"oncall", "the downstream is failing"});
  std::this_thread::sleep_for(500ms);
  auto held = engine.start_workflow<SlowWorkflow>("held", 5);
  REQUIRE(wait_until([&] { return db.count("SELECT count(*) FROM {s}.tasks WHERE status = 'pending'") == 1; }, 10s));
  std::this_thread::sleep_for(500ms);
  CHECK(db.count("SELECT count(*) FROM {s}.tasks WHERE workflow_id = 'held' AND attempt > 0") == 0);
  CHECK(client.queues().resume_activity("slow", {"oncall", "the downstream is back"}));
  CHECK(held.result(5s) == 5);  // well before the engine's next poll
}

TEST_CASE("a paused workflow type is neither started at once, claimed nor continued by a step, until resumed",
          "[queues][paused_types]") {
  TestDb db;
  auto engine = serving(db, {"default"});
  auto journal_length = [&](const std::string& id) {
    return db.count("SELECT next_seq FROM {s}.workflows WHERE workflow_id = '" + id + "'");
  };
  // A run under way: its call runs, and its commit does not carry the run on while it is paused.
  auto under_way = engine->start_workflow<SlowWorkflow>("paused-under-way", 600);
  REQUIRE(wait_until([&] { return db.count("SELECT count(*) FROM {s}.tasks WHERE status = 'running'") == 1; }, 10s));
  engine->queues().pause_workflow("slow_one", {"oncall", "a bad deploy"});
  // A run started now is not leased to the engine that starts it, nor claimed.
  auto fresh = engine->start_workflow<SlowWorkflow>("paused-fresh", 1);
  REQUIRE(wait_until([&] { return db.count("SELECT count(*) FROM {s}.tasks WHERE status = 'running'") == 0; }, 10s));
  std::this_thread::sleep_for(700ms);
  CHECK(journal_length("paused-fresh") == 1);      // its start only
  CHECK(journal_length("paused-under-way") == 3);  // started, scheduled, completed: not carried on
  CHECK(under_way.status() == WorkflowStatus::running);
  CHECK(engine->queues().resume_workflow("slow_one", {"oncall", "rolled back"}));
  CHECK(under_way.result(10s) == 600);
  CHECK(fresh.result(10s) == 1);
}

TEST_CASE("a claim sent with the names read before a pause gives the paused type's runs back",
          "[queues][paused_types]") {
  TestDb db;
  FailpointsOff off;
  // Each claim waits between reading the names and claiming: a pause and a start fall in between.
  detail::configure_failpoints("runner.before_claim=sleep:300");
  auto engine = serving(db, {"default"});
  std::this_thread::sleep_for(400ms);  // every runner thread in a claim's wait, or about to be
  engine->queues().pause_workflow("slow_one", {"oncall", "a bad deploy"});
  auto fresh = engine->start_workflow<SlowWorkflow>("claimed-while-pausing", 1);
  std::this_thread::sleep_for(1s);  // the claims sent with the old names have come back
  CHECK(db.count("SELECT next_seq FROM {s}.workflows WHERE workflow_id = 'claimed-while-pausing'") == 1);
  CHECK(db.count("SELECT count(*) FROM {s}.workflows WHERE lease_owner IS NOT NULL") == 0);  // given back
  detail::configure_failpoints("");
  CHECK(engine->queues().resume_workflow("slow_one", {"oncall", "rolled back"}));
  CHECK(fresh.result(10s) == 1);
}

TEST_CASE("a claim of attempts sent with the names read before a pause gives the paused activity's tasks back",
          "[queues][paused_types]") {
  TestDb db;
  FailpointsOff off;
  auto engine = serving(db, {"default"});
  CHECK(engine->start_workflow<SlowWorkflow>("warm", 1).result(10s) == 1);
  // Each claim waits between reading the names and claiming: a pause and a call fall in between.
  detail::configure_failpoints("dispatcher.before_claim=sleep:300");
  std::this_thread::sleep_for(400ms);
  engine->queues().pause_activity("slow", {"oncall", "the downstream is failing"});
  auto held = engine->start_workflow<SlowWorkflow>("held-call", 5);
  std::this_thread::sleep_for(1s);  // the claims sent with the old names have come back
  CHECK(db.count("SELECT count(*) FROM {s}.tasks WHERE workflow_id = 'held-call' AND status = 'pending' "
                 "AND attempt = 0 AND lease_owner IS NULL") == 1);
  detail::configure_failpoints("");
  CHECK(engine->queues().resume_activity("slow", {"oncall", "the downstream is back"}));
  CHECK(held.result(10s) == 5);
}

TEST_CASE("pausing a type with an empty name or reason is refused and writes nothing",
          "[queues][paused_types][bad_input]") {
  TestDb db;
  Engine engine(db.options());
  CHECK_THROWS_AS(engine.queues().pause_workflow("", {"oncall", "why"}), InvalidArgument);
  CHECK_THROWS_AS(engine.queues().pause_activity("slow", {"oncall", "  "}), InvalidArgument);
  CHECK_THROWS_AS(engine.queues().resume_activity(std::string(1001, 'a'), {"oncall", "why"}), InvalidArgument);
  CHECK(engine.queues().paused_types().empty());
  CHECK(db.count("SELECT count(*) FROM {s}.audit") == 0);
}

TEST_CASE("an attempt whose run is cancelled keeps its place until its body returns", "[queues][activities]") {
  TestDb db;
  EngineOptions options = db.options();
  options.queues = {"default", "one-at-a-time"};
  Engine engine(options);
  engine.add<CountedCall>().add<CountedWorkflow>().add_queue({"one-at-a-time", 1, std::nullopt});
  engine.start();
  counted_most = 0;
  auto first = engine.start_workflow<CountedWorkflow>("counted-first", 1500);
  REQUIRE(wait_until([&] { return counted_now.load() == 1; }, 10s));
  first.cancel("the customer left");
  REQUIRE(wait_until([&] { return db.count("SELECT count(*) FROM {s}.tasks WHERE status = 'cancelled'") == 1; }, 10s));
  // The cancelled body runs on for a while: the next call waits for it, not for its lease.
  auto second = engine.start_workflow<CountedWorkflow>("counted-second", 10);
  CHECK(second.result(10s) == 10);
  CHECK(counted_most.load() == 1);
}

TEST_CASE("an attempt taken over from a dead engine waits while its queue is paused, and counts as an attempt",
          "[queues][activities][process]") {
  TestDb db;
  Engine client(db.options());
  register_all(client);
  client.queues().define({"calls", 2, std::nullopt});
  const auto worker = [&] {
    return spawn_program(DURABLE_TEST_WORKER, db.url(), {db.schema(), "serve"}, {"DURABLE_TEST_QUEUES=calls"});
  };
  std::vector<pid_t> workers{worker()};
  const KilledAtExit cleanup{workers};
  auto run = client.start_workflow<QueuedCallsWorkflow>("calls-taken-over", calls_on("calls", 1, 1500));
  REQUIRE(wait_until([&] { return db.count("SELECT count(*) FROM {s}.tasks WHERE status = 'running'") == 1; }, 20s));
  kill(workers[0], SIGKILL);
  wait_for(workers[0]);
  client.queues().pause("calls", {"oncall", "the API is down"});
  db.query("UPDATE {s}.tasks SET lease_until = {s}.db_now() WHERE status = 'running'");  // as it would run out
  db.query("UPDATE {s}.workflows SET lease_until = {s}.db_now() WHERE status = 'running'");
  workers[0] = worker();
  std::this_thread::sleep_for(1500ms);  // the new worker polls: the expired attempt is not started again
  CHECK(db.count("SELECT attempt FROM {s}.tasks WHERE status = 'running'") == 1);
  client.queues().resume("calls", {"oncall", "the API is back"});
  CHECK(run.result(20s) == 1500);
  CHECK(db.count("SELECT count(*) FROM {s}.attempts WHERE outcome = 'lease_expired'") == 1);
  kill(workers[0], SIGTERM);
  wait_for(workers[0]);
}
