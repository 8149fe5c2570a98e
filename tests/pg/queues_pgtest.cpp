// Flow control (durable/queues.hpp): named queues whose limits hold across engines and crashes,
// keys that take turns, priorities, pause and resume, cancels of queued runs, and bad input.
#include <catch2/catch.hpp>
#include <pqxx/pqxx>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <map>
#include <set>
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

const OperatorAction queue_operator{"oncall@example.com", "the downstream API is down"};

StartOptions on_queue(const std::string& queue, const std::string& key = {}, int priority = 0) {
  StartOptions options;
  options.queue = queue;
  options.concurrency_key = key;
  options.priority = priority;
  return options;
}

// The most admitted runs of a queue (running, not queued) ever seen at once, in total and per key.
MostSampler admitted_sampler(const TestDb& db, const std::string& queue) {
  return MostSampler(db, "SELECT concurrency_key, count(*) FROM \"" + db.schema() + "\".workflows WHERE queue = '" +
                             queue + "' AND status = 'running' AND NOT queued GROUP BY concurrency_key");
}

// The workflow ids of a queue's runs, in the order they ended.
std::vector<std::string> ended_in_order(const TestDb& db, const std::string& queue) {
  std::vector<std::string> ids;
  for (const auto& row : db.query("SELECT workflow_id FROM {s}.workflows WHERE queue = '" + queue +
                                  "' AND status <> 'running' ORDER BY ended_at, workflow_id")) {
    ids.push_back(row[0].as<std::string>());
  }
  return ids;
}

long long queued_runs(const TestDb& db, const std::string& queue) {
  return db.count("SELECT count(*) FROM {s}.workflows WHERE queue = '" + queue + "' AND status = 'running' AND queued");
}

// An engine on the test's schema that serves `queue` (defined with `spec` unless it is empty).
std::unique_ptr<Engine> serving(const TestDb& db, const std::string& queue, const QueueSpec* spec = nullptr,
                                Duration poll_interval = Duration{0}) {
  EngineOptions options = db.options();
  if (poll_interval > Duration{0}) options.poll_interval = poll_interval;
  options.queues = {"default", queue};
  auto engine = std::make_unique<Engine>(options);
  register_all(*engine);
  if (spec) engine->add_queue(*spec);
  engine->start();
  return engine;
}

}  // namespace

TEST_CASE("a named queue admits no more runs than its concurrency, and runs them all", "[queues]") {
  TestDb db;
  const QueueSpec spec{"narrow", 2, std::nullopt};
  auto engine = serving(db, "narrow", &spec);
  MostSampler sampler = admitted_sampler(db, "narrow");
  std::vector<WorkflowHandle<int>> runs;
  for (int i = 0; i < 8; ++i) {
    runs.push_back(engine->start_workflow<SlowWorkflow>(fmt::format("narrow-{}", i), 150, on_queue("narrow")));
  }
  for (auto& run : runs) CHECK(run.result(20s) == 150);
  sampler.stop();
  CHECK(sampler.samples() > 50);
  CHECK(sampler.most_in_total() == 2);  // never more, and the limit was used
  CHECK(queued_runs(db, "narrow") == 0);
}

TEST_CASE("keys take turns: a key with a backlog does not hold back a key with a few runs", "[queues]") {
  TestDb db;
  Engine client(db.options());  // a thin client starts every run before any engine admits one
  register_all(client);
  client.queues().define({"shared", 2, std::nullopt});
  for (int i = 0; i < 24; ++i) {
    client.start_workflow<SlowWorkflow>(fmt::format("a-{:02}", i), 50, on_queue("shared", "tenant-a"));
  }
  for (int i = 0; i < 3; ++i) {
    client.start_workflow<SlowWorkflow>(fmt::format("b-{:02}", i), 50, on_queue("shared", "tenant-b"));
  }
  CHECK(client.queues().get("shared").queued == 27);
  auto engine = serving(db, "shared");
  REQUIRE(wait_until([&] { return ended_in_order(db, "shared").size() == 27; }, 30s));
  const auto order = ended_in_order(db, "shared");
  // Oldest first would end every a-run before b-00. Turns end the b-runs among the first eight.
  const auto last_b = std::find(order.begin(), order.end(), "b-02");
  CHECK(last_b - order.begin() < 8);
}

TEST_CASE("keys take turns one run at a time: a key is served by turns, not only by its runs running", "[queues]") {
  TestDb db;
  Engine client(db.options());
  register_all(client);
  client.queues().define({"single", 1, std::nullopt});
  for (int i = 0; i < 6; ++i) {
    client.start_workflow<SlowWorkflow>(fmt::format("a-{:02}", i), 10, on_queue("single", "tenant-a"));
  }
  for (int i = 0; i < 2; ++i) {
    client.start_workflow<SlowWorkflow>(fmt::format("b-{:02}", i), 10, on_queue("single", "tenant-b"));
  }
  auto engine = serving(db, "single");
  REQUIRE(wait_until([&] { return ended_in_order(db, "single").size() == 8; }, 30s));
  // With one run at a time no key ever has a run running when the next is admitted: a turn that
  // counted only running runs would admit every older a-run first.
  const auto order = ended_in_order(db, "single");
  CHECK(std::find(order.begin(), order.end(), "b-01") - order.begin() < 4);
}

TEST_CASE("a key with a weight takes that many turns in each round", "[queues]") {
  TestDb db;
  Engine client(db.options());
  register_all(client);
  QueueSpec spec{"weighted", 1, std::nullopt};
  spec.key_weights = {{"gold", 3}};
  client.queues().define(spec);
  CHECK(client.queues().get("weighted").spec.key_weights == std::map<std::string, int>{{"gold", 3}});
  for (int i = 0; i < 9; ++i) {
    client.start_workflow<SlowWorkflow>(fmt::format("gold-{:02}", i), 10, on_queue("weighted", "gold"));
    client.start_workflow<SlowWorkflow>(fmt::format("plain-{:02}", i), 10, on_queue("weighted", "plain"));
  }
  auto engine = serving(db, "weighted");
  REQUIRE(wait_until([&] { return ended_in_order(db, "weighted").size() == 18; }, 30s));
  // One at a time, in rounds of three gold runs to one plain run (equal weights alternate).
  const auto order = ended_in_order(db, "weighted");
  const auto gold_in_first_8 =
      std::count_if(order.begin(), order.begin() + 8, [](const std::string& id) { return id.rfind("gold", 0) == 0; });
  CHECK(gold_in_first_8 == 6);
}

TEST_CASE("a key's concurrency holds per key while other keys use the rest of the queue", "[queues]") {
  TestDb db;
  const QueueSpec spec{"per-key", 4, 1};
  auto engine = serving(db, "per-key", &spec);
  MostSampler sampler = admitted_sampler(db, "per-key");
  std::vector<WorkflowHandle<int>> runs;
  for (int i = 0; i < 12; ++i) {
    const std::string key = i < 8 ? "big" : fmt::format("small-{}", i);
    runs.push_back(engine->start_workflow<SlowWorkflow>(fmt::format("pk-{}", i), 100, on_queue("per-key", key)));
  }
  for (auto& run : runs) CHECK(run.result(30s) == 100);
  sampler.stop();
  CHECK(sampler.most_per_key() == 1);
  CHECK(sampler.most_in_total() >= 2);  // the small keys ran beside the big one
  CHECK(sampler.most_in_total() <= 4);
}

TEST_CASE("higher priority is admitted first, the same priority oldest first", "[queues]") {
  TestDb db;
  Engine client(db.options());
  register_all(client);
  client.queues().define({"ordered", 1, std::nullopt});
  for (int i = 0; i < 3; ++i) client.start_workflow<SlowWorkflow>(fmt::format("low-{}", i), 10, on_queue("ordered"));
  for (int i = 0; i < 2; ++i) {
    client.start_workflow<SlowWorkflow>(fmt::format("high-{}", i), 10, on_queue("ordered", "", 5));
  }
  auto engine = serving(db, "ordered");
  REQUIRE(wait_until([&] { return ended_in_order(db, "ordered").size() == 5; }, 20s));
  const std::vector<std::string> expected{"high-0", "high-1", "low-0", "low-1", "low-2"};
  CHECK(ended_in_order(db, "ordered") == expected);
}

TEST_CASE("with priority aging, low priority rises to the highest waiting and takes turns there", "[queues][aging]") {
  TestDb db;
  Engine client(db.options());
  register_all(client);
  QueueSpec aging{"aging", 1, std::nullopt};
  aging.priority_aging = 400ms;
  client.queues().define(aging);
  CHECK(client.queues().get("aging").spec.priority_aging == Duration{400ms});
  client.queues().define({"plain", 1, std::nullopt});  // the same runs, without aging
  for (const std::string queue : {"aging", "plain"}) {
    for (int i = 0; i < 4; ++i) {
      client.start_workflow<SlowWorkflow>(fmt::format("{}-old-{}", queue, i), 10, on_queue(queue, "old"));
    }
  }
  std::this_thread::sleep_for(1500ms);  // three steps and more: the old runs would rise to 3, and stop at 2
  for (const std::string queue : {"aging", "plain"}) {
    for (int i = 0; i < 4; ++i) {
      client.start_workflow<SlowWorkflow>(fmt::format("{}-new-{}", queue, i), 10, on_queue(queue, "new", 2));
    }
  }
  EngineOptions options = db.options();
  options.queues = {"default", "aging", "plain"};  // SlowWorkflow's activity is on the default queue
  Engine engine(options);
  register_all(engine);
  engine.start();
  REQUIRE(wait_until([&] { return ended_in_order(db, "aging").size() == 8 && ended_in_order(db, "plain").size() == 8; },
                     30s));
  auto olds_in_first_4 = [&](const std::string& queue) {
    const auto order = ended_in_order(db, queue);
    return std::count_if(order.begin(), order.begin() + 4,
                         [](const std::string& id) { return id.find("-old-") != std::string::npos; });
  };
  // Without aging priority 2 goes first. With it the old runs rise to 2, no higher: the two keys
  // then take turns (by age alone the old ones would all go first).
  CHECK(olds_in_first_4("plain") == 0);
  CHECK(olds_in_first_4("aging") == 2);
  CHECK(queued_runs(db, "aging") == 0);
  CHECK(db.count("SELECT count(*) FROM {s}.queue_lines") == 0);
}

TEST_CASE("priority aging set and unset: the lines take their levels and give them back", "[queues][aging]") {
  TestDb db;
  Engine client(db.options());
  register_all(client);
  QueueSpec spec{"toggled", 1, std::nullopt};
  client.queues().define(spec);
  client.queues().pause("toggled", queue_operator);  // nothing admitted: the lines stay
  client.start_workflow<SlowWorkflow>("toggled-low", 10, on_queue("toggled", "a"));
  client.start_workflow<SlowWorkflow>("toggled-high", 10, on_queue("toggled", "b", 3));
  auto level_text = [&] {
    std::string text;
    for (const auto& row : db.query("SELECT concurrency_key || '=' || level FROM {s}.queue_lines ORDER BY 1")) {
      text += row[0].as<std::string>() + " ";
    }
    return text;
  };
  CHECK(level_text() == "a=0 b=3 ");
  auto engine = serving(db, "toggled");  // its admissions age the lines first, even on a paused queue
  spec.priority_aging = 10ms;
  client.queues().define(spec);
  // Risen to the highest priority waiting, and no further.
  CHECK(wait_until([&] { return level_text() == "a=3 b=3 "; }, 10s));
  spec.priority_aging.reset();
  client.queues().define(spec);
  CHECK(level_text() == "a=0 b=3 ");
  CHECK(db.count("SELECT count(*) FROM {s}.queue_lines WHERE rises_at IS NOT NULL") == 0);
}

TEST_CASE("a paused queue admits nothing, lets admitted runs finish, and is audited", "[queues]") {
  TestDb db;
  const QueueSpec spec{"pausable", 1, std::nullopt};
  auto engine = serving(db, "pausable", &spec);
  auto first = engine->start_workflow<SlowWorkflow>("pause-0", 400, on_queue("pausable"));
  REQUIRE(wait_until([&] { return queued_runs(db, "pausable") == 0; }));
  engine->queues().pause("pausable", queue_operator);
  auto second = engine->start_workflow<SlowWorkflow>("pause-1", 10, on_queue("pausable"));
  CHECK(first.result(10s) == 400);     // admitted before the pause: it finishes
  std::this_thread::sleep_for(600ms);  // three poll intervals and more
  CHECK(second.status() == WorkflowStatus::running);
  const auto paused = engine->queues().get("pausable");
  CHECK(paused.paused);
  CHECK(paused.paused_by == queue_operator.actor);
  CHECK(paused.paused_reason == queue_operator.reason);
  CHECK(paused.queued == 1);
  CHECK(paused.running == 0);
  // Not runnable while queued: an engine of a build before queues (a fleet being upgraded), which
  // claims runnable runs without looking at `queued`, leaves it alone.
  CHECK(db.count("SELECT count(*) FROM {s}.workflows WHERE queued AND runnable") == 0);
  engine->queues().resume("pausable", {"oncall@example.com", "the API is back"});
  CHECK(second.result(10s) == 10);
  const auto audit = engine->runs().audit();
  REQUIRE(audit.size() == 2);
  CHECK(audit[0].action == "queue_resume");
  CHECK(audit[1].action == "queue_pause");
  CHECK(audit[1].details.at("queue") == "pausable");
}

TEST_CASE("a queued run asked to cancel ends at once, even on a paused queue", "[queues]") {
  TestDb db;
  const QueueSpec spec{"held", 1, std::nullopt};
  auto engine = serving(db, "held", &spec);
  engine->queues().pause("held", queue_operator);
  auto run = engine->start_workflow<SlowWorkflow>("held-0", 10, on_queue("held"));
  CHECK(run.cancel("not needed any more"));
  CHECK_THROWS_AS(run.result(10s), WorkflowCancelled);
  CHECK(events_of(db, "held-0", "workflow_cancelled") == 1);
  CHECK(db.count("SELECT count(*) FROM {s}.attempts") == 0);  // its code never ran
}

TEST_CASE("a lower concurrency admits nothing more until the admitted runs are under it", "[queues]") {
  TestDb db;
  const QueueSpec spec{"shrinking", 3, std::nullopt};
  auto engine = serving(db, "shrinking", &spec);
  std::vector<WorkflowHandle<int>> runs;
  for (int i = 0; i < 9; ++i) {
    runs.push_back(engine->start_workflow<SlowWorkflow>(fmt::format("shrink-{}", i), 300, on_queue("shrinking")));
  }
  REQUIRE(wait_until([&] { return engine->queues().get("shrinking").running == 3; }));
  engine->queues().define({"shrinking", 1, std::nullopt});
  // From the first moment one or none is admitted, no more than one ever is again.
  REQUIRE(wait_until([&] { return engine->queues().get("shrinking").running <= 1; }, 10s));
  MostSampler sampler = admitted_sampler(db, "shrinking");
  for (auto& run : runs) CHECK(run.result(30s) == 300);
  sampler.stop();
  CHECK(sampler.most_in_total() == 1);
}

TEST_CASE("bad queue input is a typed error and writes nothing", "[queues][bad_input]") {
  TestDb db;
  Engine client(db.options());
  register_all(client);
  CHECK_THROWS_AS(client.queues().define({"zero", 0, std::nullopt}), InvalidQueue);
  CHECK_THROWS_AS(client.queues().define({"negative", std::nullopt, -1}), InvalidQueue);
  CHECK_THROWS_AS(client.queues().define({"default", 1, std::nullopt}), InvalidQueue);
  CHECK_THROWS_AS(client.queues().define({"bad name", 1, std::nullopt}), InvalidQueue);
  CHECK_THROWS_AS(client.queues().define({std::string(64, 'q'), 1, std::nullopt}), InvalidQueue);
  for (const auto& [key, weight] : std::vector<std::pair<std::string, int>>{
           {"gold", 0}, {"gold", 101}, {"\xff\xfe", 2}, {std::string(256, 'k'), 2}}) {
    QueueSpec weighted{"weighted", 1, std::nullopt};
    weighted.key_weights = {{key, weight}};
    CHECK_THROWS_WITH(client.queues().define(weighted), Catch::Matchers::Contains("QueueSpec::key_weights"));
  }
  for (const Duration step : {Duration{0}, Duration{-5}, Duration{std::chrono::hours{24 * 367}}}) {
    QueueSpec aging{"aging", 1, std::nullopt};
    aging.priority_aging = step;
    CHECK_THROWS_WITH(client.queues().define(aging), Catch::Matchers::Contains("QueueSpec::priority_aging is"));
  }
  CHECK(client.queues().list().empty());

  CHECK_THROWS_AS(client.start_workflow<SlowWorkflow>("bad-1", 1, on_queue("nowhere")), UnknownQueue);
  client.queues().define({"known", 1, std::nullopt});
  CHECK_THROWS_AS(client.start_workflow<SlowWorkflow>("bad-2", 1, on_queue("known", std::string(256, 'k'))),
                  InvalidQueue);
  CHECK_THROWS_AS(client.start_workflow<SlowWorkflow>("bad-3", 1, on_queue("known", "\xff\xfe")), InvalidQueue);
  CHECK_THROWS_AS(client.start_workflow<SlowWorkflow>("bad-4", 1, on_queue("", "tenant")), InvalidQueue);
  CHECK_THROWS_AS(client.start_workflow<SlowWorkflow>("bad-5", 1, on_queue("default", "", 3)), InvalidQueue);
  CHECK_THROWS_AS(client.start_workflow<SlowWorkflow>("bad-6", 1, on_queue("no/slash")), InvalidQueue);
  CHECK(db.count("SELECT count(*) FROM {s}.workflows") == 0);
  try {
    client.start_workflow<SlowWorkflow>("bad-1", 1, on_queue("nowhere"));
  } catch (const UnknownQueue& e) {
    CHECK_THAT(e.what(), Catch::Contains("nowhere") && Catch::Contains("define it"));
  }

  CHECK_THROWS_AS(client.queues().pause("known", {"me", " "}), InvalidArgument);
  CHECK_THROWS_AS(client.queues().pause("unknown", queue_operator), UnknownQueue);
  CHECK_THROWS_AS(client.queues().get("unknown"), UnknownQueue);
  CHECK_THROWS_AS(client.queues().keys("known", 0), InvalidArgument);
  CHECK_FALSE(client.queues().get("known").paused);
  CHECK(client.runs().audit().empty());

  EngineOptions options = db.options();
  options.queues = {"default", "undefined"};
  Engine server(options);
  register_all(server);
  CHECK_THROWS_AS(server.start(), UnknownQueue);
  Engine adds(db.options());
  CHECK_THROWS_AS(adds.add_queue({"zero", 0, std::nullopt}), InvalidQueue);
}

TEST_CASE("queue limits hold exactly across three engine processes, one of them killed", "[queues][process]") {
  TestDb db;
  Engine client(db.options());
  register_all(client);
  client.queues().define({"tenants", 4, 2});
  const auto worker = [&] {
    return spawn_program(DURABLE_TEST_WORKER, db.url(), {db.schema(), "serve"}, {"DURABLE_TEST_QUEUES=tenants"});
  };
  MostSampler sampler = admitted_sampler(db, "tenants");
  std::vector<pid_t> workers{worker(), worker(), worker()};
  std::vector<WorkflowHandle<int>> runs;
  for (int i = 0; i < 48; ++i) {
    runs.push_back(client.start_workflow<SparedSlowWorkflow>(fmt::format("t-{:02}", i), 60,
                                                             on_queue("tenants", fmt::format("tenant-{}", i % 4))));
  }
  REQUIRE(wait_until([&] { return ended_in_order(db, "tenants").size() >= 8; }, 30s));
  kill(workers[0], SIGKILL);  // mid-flight: what it had admitted stays admitted until taken over
  wait_for(workers[0]);
  // Its leases end now, as they would have run out: the others take its runs over.
  end_leases_of(db, workers[0]);
  workers[0] = worker();
  for (auto& run : runs) CHECK(run.result(60s) == 60);
  stop_workers(workers);
  check_never_over(sampler, 4, 2, 3);  // and the engines together used the queue
}

TEST_CASE("admission waits for the queue's lock, which a limit change holds too", "[queues]") {
  TestDb db;
  const QueueSpec spec{"locked", 2, std::nullopt};
  auto engine = serving(db, "locked", &spec);
  // What Queues::define holds while it changes the limits: no admission counts meanwhile.
  pqxx::connection conn(db.url());
  pqxx::work holder(conn);
  holder.exec("SELECT 1 FROM \"" + db.schema() + "\".queues WHERE name = 'locked' FOR NO KEY UPDATE");
  auto run = engine->start_workflow<SlowWorkflow>("locked-0", 10, on_queue("locked"));
  std::this_thread::sleep_for(600ms);  // three poll intervals and more
  CHECK(queued_runs(db, "locked") == 1);
  holder.commit();
  CHECK(run.result(10s) == 10);
}

TEST_CASE("a run's end admits the next queued run at once, not at the next poll", "[queues]") {
  TestDb db;
  const QueueSpec spec{"prompt", 1, std::nullopt};
  auto engine = serving(db, "prompt", &spec, std::chrono::seconds{5});
  const auto began = std::chrono::steady_clock::now();
  std::vector<WorkflowHandle<int>> runs;
  for (int i = 0; i < 5; ++i) {
    runs.push_back(engine->start_workflow<SlowWorkflow>(fmt::format("prompt-{}", i), 10, on_queue("prompt")));
  }
  for (auto& run : runs) CHECK(run.result(60s) == 10);
  // One at a time, each admitted as the one before ended: well within one 5 s poll interval.
  CHECK(std::chrono::steady_clock::now() - began < 4s);
}

namespace {

// The database times at which each run of the queue called its first activity, ascending.
std::vector<double> first_attempts_s(const TestDb& db, const std::string& queue) {
  std::vector<double> at;
  for (const auto& row : db.query("SELECT extract(epoch FROM min(a.started_at))::float8 FROM {s}.workflows w JOIN "
                                  "{s}.attempts a ON a.run_id = w.run_id WHERE w.queue = '" +
                                  queue + "' GROUP BY w.run_id ORDER BY 1")) {
    at.push_back(row[0].as<double>());
  }
  return at;
}

// The most of `times` (ascending) within any span shorter than `window` seconds.
std::size_t most_within(const std::vector<double>& times, double window) {
  std::size_t most = 0;
  for (std::size_t i = 0, j = 0; j < times.size(); ++j) {
    while (times[j] - times[i] >= window) ++i;
    most = std::max(most, j - i + 1);
  }
  return most;
}

QueueSpec rated(const std::string& name, std::optional<RateLimit> rate, std::optional<RateLimit> key_rate = {}) {
  QueueSpec spec;
  spec.name = name;
  spec.rate = rate;
  spec.key_rate = key_rate;
  return spec;
}

}  // namespace

TEST_CASE("a queue's rate admits no more than its count in any period, and the rest wait", "[queues][rate]") {
  TestDb db;
  const QueueSpec spec = rated("metered", RateLimit{3, 1000ms});
  auto engine = serving(db, "metered", &spec);
  const auto began = std::chrono::steady_clock::now();
  std::vector<WorkflowHandle<int>> runs;
  for (int i = 0; i < 9; ++i) {
    runs.push_back(engine->start_workflow<SlowWorkflow>(fmt::format("metered-{}", i), 1, on_queue("metered")));
  }
  for (auto& run : runs) CHECK(run.result(30s) == 1);
  // Nine at three a second: the last three go in the third second, not before two have passed.
  CHECK(std::chrono::steady_clock::now() - began >= 2s);
  CHECK(std::chrono::steady_clock::now() - began < 6s);  // each window's end admits the next at once
  // Each run's first activity comes after its admission: three in a second at most (less 50 ms
  // for the replays' own spread).
  CHECK(most_within(first_attempts_s(db, "metered"), 0.95) <= 3);
}

TEST_CASE("a key's rate holds per key while other keys go on", "[queues][rate]") {
  TestDb db;
  const QueueSpec spec = rated("per-key-rate", std::nullopt, RateLimit{1, std::chrono::hours{1}});
  auto engine = serving(db, "per-key-rate", &spec);
  auto first = engine->start_workflow<SlowWorkflow>("kr-a-0", 1, on_queue("per-key-rate", "a"));
  auto second = engine->start_workflow<SlowWorkflow>("kr-a-1", 1, on_queue("per-key-rate", "a"));
  auto other = engine->start_workflow<SlowWorkflow>("kr-b-0", 1, on_queue("per-key-rate", "b"));
  CHECK(first.result(10s) == 1);
  CHECK(other.result(10s) == 1);  // key b has its own window
  std::this_thread::sleep_for(600ms);
  CHECK(second.status() == WorkflowStatus::running);  // a's window is full for an hour
  CHECK(queued_runs(db, "per-key-rate") == 1);
  // The window is on the database clock: an hour on, a's next run goes in.
  testing::advance_clock(db.url(), db.schema(), std::chrono::hours{1});
  CHECK(second.result(10s) == 1);
}

TEST_CASE("a bad rate is a typed error and writes nothing", "[queues][rate][bad_input]") {
  TestDb db;
  Engine client(db.options());
  CHECK_THROWS_AS(client.queues().define(rated("r", RateLimit{0, 1000ms})), InvalidQueue);
  CHECK_THROWS_AS(client.queues().define(rated("r", RateLimit{5, 0ms})), InvalidQueue);
  CHECK_THROWS_AS(client.queues().define(rated("r", std::nullopt, RateLimit{5, -1ms})), InvalidQueue);
  CHECK_THROWS_AS(client.queues().define(rated("r", RateLimit{5, std::chrono::hours{24 * 400}})), InvalidQueue);
  CHECK(client.queues().list().empty());
  client.queues().define(rated("r", RateLimit{5, 2000ms}, RateLimit{1, 60000ms}));
  const QueueInfo info = client.queues().get("r");
  REQUIRE(info.spec.rate);
  CHECK(info.spec.rate->count == 5);
  CHECK(info.spec.rate->period == 2000ms);
  REQUIRE(info.spec.key_rate);
  CHECK(info.spec.key_rate->period == 60000ms);
}

TEST_CASE("Runs::stats, the metrics and the Prometheus text show each named queue", "[queues][metrics]") {
  TestDb db;
  const QueueSpec spec{"watched", 1, std::nullopt};
  auto engine = serving(db, "watched", &spec);
  engine->queues().pause("watched", queue_operator);
  engine->start_workflow<SlowWorkflow>("watched-0", 1, on_queue("watched"));
  engine->start_workflow<SlowWorkflow>("watched-1", 1, on_queue("watched"));
  const Stats stats = engine->runs().stats();
  REQUIRE(stats.queues.size() == 1);
  CHECK(stats.queues[0].spec.name == "watched");
  CHECK(stats.queues[0].queued == 2);
  CHECK(stats.queues[0].paused);
  CHECK(stats.workflow_queues.empty());  // queued runs wait for admission, not for a runner
  const EngineMetrics metrics = engine->metrics();
  REQUIRE(metrics.queues.size() == 1);
  CHECK(metrics.queues[0].queue == "watched");
  CHECK(metrics.queues[0].queued == 2);
  CHECK(metrics.queues[0].paused);
  CHECK(*metrics.workflow_queue_age_seconds == 0.0);
  const std::string text = prometheus_text({metrics});
  CHECK_THAT(text, Catch::Contains("durable_queue_runs_queued{schema=\"" + db.schema() +
                                   "\",engine_instance=\"default\",queue=\"watched\"} 2"));
  CHECK_THAT(text, Catch::Contains(",queue=\"watched\"} 1\n"));  // durable_queue_paused
}

TEST_CASE("a run that continues as new keeps its place, and a cancel of the chain frees it", "[queues][continue]") {
  TestDb db;
  const QueueSpec spec{"looping", 1, std::nullopt};
  auto engine = serving(db, "looping", &spec);
  MostSampler sampler = admitted_sampler(db, "looping");
  engine->start_workflow<LoopWorkflow>("looping-0", loop_of(12, 3, 1), on_queue("looping"));
  auto waiting = engine->start_workflow<SlowWorkflow>("looping-1", 1, on_queue("looping"));
  // Four runs of the chain, one after another, each admitted in its predecessor's place.
  REQUIRE(wait_until([&] { return runs_of(db, "looping-0") == 4; }));
  CHECK(waiting.status() == WorkflowStatus::running);
  CHECK(queued_runs(db, "looping") == 1);
  // The chain waits for ticks it never gets; a cancel ends it and the next run goes in.
  engine->workflow(WorkflowId{"looping-0"}).cancel("done with it");
  CHECK(waiting.result(10s) == 1);
  sampler.stop();
  CHECK(sampler.most_in_total() == 1);
  CHECK(db.count("SELECT count(*) FROM {s}.workflows WHERE workflow_id = 'looping-0' AND status = 'continued'") == 3);
}

TEST_CASE("a deduplication key lets one run hold it while it is queued or running", "[queues][dedup]") {
  TestDb db;
  Engine client(db.options());
  register_all(client);
  client.queues().define({"dedup", 1, std::nullopt});
  StartOptions keyed = on_queue("dedup");
  keyed.deduplication_key = "invoice-77";
  client.start_workflow<SlowWorkflow>("dedup-1", 5, keyed);  // queued: no engine serves the queue yet
  try {
    client.start_workflow<SlowWorkflow>("dedup-2", 5, keyed);
    FAIL("a second start with the key went in");
  } catch (const DuplicateStart& e) {
    CHECK(e.existing_workflow_id() == WorkflowId{"dedup-1"});
    CHECK_THAT(e.what(), Catch::Contains("invoice-77") && Catch::Contains("dedup-1"));
  }
  auto found = client.start_or_find<SlowWorkflow>("dedup-3", 5, keyed);
  CHECK_FALSE(found.started);
  CHECK(found.run.id() == WorkflowId{"dedup-1"});
  CHECK(db.count("SELECT count(*) FROM {s}.workflows") == 1);
  // Many at once: one goes in.
  StartOptions raced = on_queue("dedup");
  raced.deduplication_key = "invoice-78";
  std::atomic<int> started{0}, refused{0};
  std::vector<std::thread> racers;
  for (int i = 0; i < 6; ++i) {
    racers.emplace_back([&, i] {
      try {
        client.start_workflow<SlowWorkflow>(fmt::format("race-{}", i), 5, raced);
        ++started;
      } catch (const DuplicateStart&) {
        ++refused;
      }
    });
  }
  for (auto& t : racers) t.join();
  CHECK(started == 1);
  CHECK(refused == 5);
  // Once the holder ends, the key is free again.
  auto engine = serving(db, "dedup");
  REQUIRE(wait_until([&] { return queued_runs(db, "dedup") == 0; }, 20s));
  CHECK(client.workflow<SlowWorkflow>("dedup-1").result(10s) == 5);
  CHECK(client.start_workflow<SlowWorkflow>("dedup-4", 6, keyed).result(10s) == 6);
}

TEST_CASE("starts with a debounce key collapse into one run, admitted once the window passed", "[queues][debounce]") {
  TestDb db;
  const QueueSpec spec{"debounced", std::nullopt, std::nullopt};
  auto engine = serving(db, "debounced", &spec);
  StartOptions options = on_queue("debounced");
  options.debounce_key = "search-index";
  options.debounce = 500ms;
  auto first = engine->start_workflow<SlowWorkflow>("reindex-1", 10, options);
  std::this_thread::sleep_for(150ms);
  auto second = engine->start_workflow<SlowWorkflow>("reindex-2", 20, options);
  std::this_thread::sleep_for(150ms);
  const auto last_start = std::chrono::steady_clock::now();
  auto third = engine->start_or_find<SlowWorkflow>("reindex-3", 30, options);
  CHECK(second.id() == WorkflowId{"reindex-1"});  // the run keeps the first start's id
  CHECK_FALSE(third.started);
  CHECK(third.run.id() == WorkflowId{"reindex-1"});
  CHECK(first.result(10s) == 30);  // the last input wins
  CHECK(std::chrono::steady_clock::now() - last_start >= 450ms);
  CHECK(db.count("SELECT count(*) FROM {s}.workflows") == 1);
  // The first input, when asked; a start after the run was admitted starts a new run.
  options.debounce_input = DebounceInput::first;
  options.debounce = 200ms;
  auto kept = engine->start_workflow<SlowWorkflow>("reindex-4", 40, options);
  engine->start_workflow<SlowWorkflow>("reindex-5", 50, options);
  CHECK(kept.result(10s) == 40);
  CHECK(db.count("SELECT count(*) FROM {s}.workflows") == 2);
}

TEST_CASE("bad deduplication and debounce options are typed errors and write nothing", "[queues][bad_input]") {
  TestDb db;
  Engine client(db.options());
  register_all(client);
  client.queues().define({"keys", 1, std::nullopt});
  StartOptions no_time = on_queue("keys");
  no_time.debounce_key = "k";
  CHECK_THROWS_AS(client.start_workflow<SlowWorkflow>("bad-d1", 1, no_time), InvalidQueue);
  StartOptions no_key = on_queue("keys");
  no_key.debounce = 100ms;
  CHECK_THROWS_AS(client.start_workflow<SlowWorkflow>("bad-d2", 1, no_key), InvalidQueue);
  StartOptions on_default;
  on_default.debounce_key = "k";
  on_default.debounce = 100ms;
  CHECK_THROWS_AS(client.start_workflow<SlowWorkflow>("bad-d3", 1, on_default), InvalidQueue);
  StartOptions long_key = on_queue("keys");
  long_key.deduplication_key = std::string(256, 'd');
  CHECK_THROWS_AS(client.start_workflow<SlowWorkflow>("bad-d4", 1, long_key), InvalidQueue);
  StartOptions negative = on_queue("keys");
  negative.debounce_key = "k";
  negative.debounce = -5ms;
  CHECK_THROWS_AS(client.start_workflow<SlowWorkflow>("bad-d5", 1, negative), InvalidQueue);
  CHECK(db.count("SELECT count(*) FROM {s}.workflows") == 0);
}

// Lines (migration 22): an admission reads the lines next in turn, not every key waiting.

namespace {

long long lines_of(const TestDb& db, const std::string& queue) {
  return db.count("SELECT count(*) FROM {s}.queue_lines WHERE queue = '" + queue + "'");
}

}  // namespace

TEST_CASE("keys take turns across more keys than an admission reads", "[queues][lines]") {
  TestDb db;
  Engine client(db.options());
  register_all(client);
  client.queues().define({"wide", 1, std::nullopt});  // one at a time: runs end in the order admitted
  // Key by key: oldest first would end k00's runs first, then k01's.
  for (int key = 0; key < 40; ++key) {
    for (int i = 0; i < 2; ++i) {
      client.start_workflow<SlowWorkflow>(fmt::format("k{:02}-{}", key, i), 5,
                                          on_queue("wide", fmt::format("k{:02}", key)));
    }
  }
  CHECK(lines_of(db, "wide") == 40);
  auto engine = serving(db, "wide");
  REQUIRE(wait_until([&] { return ended_in_order(db, "wide").size() == 80; }, 60s));
  // Each admission has room for one, so it reads one line of the forty; in turns, every key's
  // first run is admitted (and ends) before any key's second.
  const auto order = ended_in_order(db, "wide");
  std::set<std::string> keys;
  for (std::size_t i = 0; i < 40; ++i) keys.insert(order[i].substr(0, 3));
  CHECK(keys.size() == 40);
  CHECK(wait_until([&] { return lines_of(db, "wide") == 0; }));  // each retired as it emptied
}

TEST_CASE("a line is not retired while a run joins it in a transaction not yet committed", "[queues][lines]") {
  TestDb db;
  Engine client(db.options());
  register_all(client);
  client.queues().define({"joining", std::nullopt, std::nullopt});
  auto first = client.start_workflow<SlowWorkflow>("first", 10, on_queue("joining", "k"));
  // A second run joins k's line in a transaction of this test, held open: a copy of the first
  // run's rows under another id, as a start writes them (the admission cannot see it yet). It
  // joins under its bucket's shared lock, or, when a session outside the schema's roles holds the
  // bucket then, with its line's row locked (migration 24).
  const bool bucket_held = GENERATE(false, true);
  INFO("the bucket held by a stranger as the run joins: " << bucket_held);
  const std::string s = "\"" + db.schema() + "\"";
  pqxx::connection stranger(db.url());
  if (bucket_held) {
    pqxx::nontransaction(stranger).exec("SELECT pg_advisory_lock(" + s + ".queue_line_bucket('joining', 'k', 0))");
  }
  pqxx::connection conn(db.url());
  pqxx::work joining(conn);
  joining.exec("WITH w AS (INSERT INTO " + s +
               ".workflows SELECT (jsonb_populate_record(o, jsonb_build_object("
               "'workflow_id', 'second', 'run_id', gen_random_uuid()))).* FROM " +
               s +
               ".workflows o "
               "WHERE o.workflow_id = 'first' RETURNING run_id) "
               "INSERT INTO " +
               s +
               ".journal SELECT (jsonb_populate_record(j, jsonb_build_object("
               "'run_id', w.run_id, 'workflow_id', 'second'))).* FROM " +
               s +
               ".journal j, w "
               "WHERE j.run_id = '" +
               first.run_id().str() + "' AND j.seq = 0");
  if (bucket_held) pqxx::nontransaction(stranger).exec("SELECT pg_advisory_unlock_all()");
  auto engine = serving(db, "joining");
  CHECK(first.result(10s) == 10);
  // The admission found k's line empty, and more than a poll interval of sweeps after it: the
  // line stays, as the joining transaction holds its bucket or its row.
  std::this_thread::sleep_for(500ms);
  CHECK(lines_of(db, "joining") == 1);
  joining.commit();
  CHECK(client.workflow<SlowWorkflow>("second").result(10s) == 10);
  CHECK(wait_until([&] { return lines_of(db, "joining") == 0; }));
}

TEST_CASE("three starters on one key while an engine drains it: every run is admitted, the line retired at the end",
          "[queues][lines]") {
  TestDb db;
  const QueueSpec spec{"joined", std::nullopt, std::nullopt};
  auto engine = serving(db, "joined", &spec);
  Engine client(db.options());
  register_all(client);
  // Starts on one key from three threads while the engine admits them as they come: the line
  // empties and is retired over and over, with starts joining it about the same moments (the test
  // above holds one such moment open). A run that joined a line retired under it would wait forever.
  std::vector<std::thread> starters;
  for (int t = 0; t < 3; ++t) {
    starters.emplace_back([&, t] {
      for (int i = 0; i < 100; ++i) {
        client.start_workflow<SlowWorkflow>(fmt::format("j{}-{:03}", t, i), 0, on_queue("joined", "one-key"));
      }
    });
  }
  for (auto& starter : starters) starter.join();
  CHECK(wait_until([&] { return ended_in_order(db, "joined").size() == 300; }, 60s));
  CHECK(queued_runs(db, "joined") == 0);
  CHECK(wait_until([&] { return lines_of(db, "joined") == 0; }));
}

TEST_CASE("a line is retired when its last queued run leaves it any way: admitted, cancelled or terminated",
          "[queues][lines]") {
  TestDb db;
  const QueueSpec spec{"leaving", 1, std::nullopt};
  auto engine = serving(db, "leaving", &spec);
  engine->queues().pause("leaving", queue_operator);
  auto admitted = engine->start_workflow<SlowWorkflow>("leave-a", 10, on_queue("leaving", "a"));
  auto cancelled = engine->start_workflow<SlowWorkflow>("leave-c", 10, on_queue("leaving", "c"));
  auto terminated = engine->start_workflow<SlowWorkflow>("leave-t", 10, on_queue("leaving", "t", 5));
  CHECK(lines_of(db, "leaving") == 3);
  CHECK(cancelled.cancel("not needed"));  // ended by the admission, paused or not
  CHECK_THROWS_AS(cancelled.result(10s), WorkflowCancelled);
  // Ended where the admission does not see it: its line is found empty by a sweep.
  CHECK(engine->runs().terminate(terminated.run_id(), queue_operator));
  engine->queues().resume("leaving", queue_operator);
  CHECK(admitted.result(10s) == 10);
  CHECK(wait_until([&] { return lines_of(db, "leaving") == 0; }));
}
