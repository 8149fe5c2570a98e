// Changing workflow code under runs in flight: blocked runs, app versions, patches, exported
// histories and replay checks, replay-safe logging.
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "pg/migrations.hpp"
#include "support/expect.hpp"
#include "support/test_db.hpp"
#include "support/test_workflows.hpp"

using namespace durable;
using namespace durable::test;
using namespace std::chrono_literals;

namespace {

// Version 1 of a workflow, and version 2, which calls another activity at sequence number 0.
struct OrderV1 {
  static constexpr auto name = "versioned";
  std::string operator()(WorkflowContext& ctx, const std::string& s) {
    auto echoed = ctx.call<EchoActivity>(s);
    ctx.sleep(1h);
    return ctx.call<EchoActivity>(echoed + "!");
  }
};
struct OrderV2 {
  static constexpr auto name = "versioned";
  std::string operator()(WorkflowContext& ctx, const std::string& s) {
    auto sum = ctx.call<AddActivity>(Pair{1, 2});
    ctx.sleep(1h);
    return ctx.call<EchoActivity>(s + std::to_string(sum));
  }
};
// Version 2 with the change patched: runs journaled by version 1 keep their path.
struct OrderV2Patched {
  static constexpr auto name = "versioned";
  std::string operator()(WorkflowContext& ctx, const std::string& s) {
    if (!ctx.patched("add-first")) return OrderV1{}(ctx, s);
    return OrderV2{}(ctx, s);
  }
};

template <typename W>
void add_version(Engine& engine) {
  engine.add<EchoActivity>().add<AddActivity>().add<W>();
}

EngineOptions versioned(const TestDb& db, std::string app_version, Duration poll = 100ms) {
  EngineOptions o = db.options();
  o.app_version = std::move(app_version);
  o.poll_interval = poll;
  return o;
}

// Starts runs `ids` under version 1 and stops that engine once they wait in their hour-long
// sleep, then moves the clock past it: whichever engine comes next replays them.
std::vector<RunId> start_under_v1(const TestDb& db, const std::vector<std::string>& ids) {
  Engine v1(versioned(db, "v1"));
  add_version<OrderV1>(v1);
  v1.start();
  std::vector<RunId> run_ids;
  for (const auto& id : ids) run_ids.push_back(v1.start_workflow<OrderV1>(id, "x").run_id());
  REQUIRE(wait_until([&] {
    return db.count("SELECT count(*) FROM {s}.journal_events WHERE kind = 'timer_started'") ==
           static_cast<long long>(ids.size());
  }));
  v1.stop();
  testing::advance_clock(db.url(), db.schema(), 2h);
  return run_ids;
}
RunId start_under_v1(const TestDb& db, const std::string& id) { return start_under_v1(db, std::vector{id})[0]; }

// Lines written to a logger while it lives, through an extra sink.
struct Captured {
  explicit Captured(std::shared_ptr<spdlog::logger> logger)
      : logger_(std::move(logger)), sink_(std::make_shared<spdlog::sinks::ostream_sink_mt>(out_)) {
    sink_->set_pattern("%v");
    logger_->sinks().push_back(sink_);
  }
  ~Captured() { logger_->sinks().pop_back(); }
  std::string text() {
    logger_->flush();
    return out_.str();
  }
  std::size_t count(const std::string& needle) {
    const std::string t = text();
    std::size_t n = 0;
    for (auto at = t.find(needle); at != std::string::npos; at = t.find(needle, at + 1)) ++n;
    return n;
  }

 private:
  std::ostringstream out_;
  std::shared_ptr<spdlog::logger> logger_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
};

int blocked_times(const TestDb& db, const RunId& run_id) {
  return static_cast<int>(db.count("SELECT coalesce((blocked->>'times')::int, 0) FROM {s}.workflows WHERE run_id = '" +
                                   run_id.str() + "'"));
}

}  // namespace

TEST_CASE("changed code blocks the run instead of failing it, counted and logged once, and old code finishes it",
          "[pg][versioning][blocked]") {
  TestDb db;
  const RunId run_id = start_under_v1(db, "order-1");
  const long long journal_before = db.count("SELECT next_seq FROM {s}.workflows WHERE run_id = '" + run_id.str() + "'");
  {
    Captured log(spdlog::get("durable"));
    Engine v2(versioned(db, "v2", 300ms));
    add_version<OrderV2>(v2);
    v2.start();
    REQUIRE(wait_until([&] { return v2.runs().get(run_id).blocked; }));

    const RunInfo run = v2.runs().get(run_id);
    CHECK(run.status == WorkflowStatus::running);
    REQUIRE(run.blocked_by);
    CHECK(run.blocked_by->divergence.step == 0);
    CHECK(run.blocked_by->divergence.journaled == "activity 'echo'");
    CHECK(run.blocked_by->divergence.asked == "activity 'add'");
    CHECK_THAT(run.blocked_by->divergence.message,
               Catch::Contains("'order-1'") && Catch::Contains("sequence number 0"));
    CHECK(run.blocked_by->app_version == "v2");
    CHECK(run.blocked_at.has_value());
    CHECK(run.app_version == "v2");
    CHECK(v2.metrics().workflows_blocked == 1);
    CHECK_THAT(prometheus_text({v2.metrics()}),
               Catch::Contains("durable_workflows_blocked{") && Catch::Contains("} 1\n"));
    CHECK(v2.runs().list({.filter = {.blocked_only = true}}).runs.size() == 1);

    // Tried again now and then (backing off from the poll interval), not in a loop, and logged once.
    std::this_thread::sleep_for(2s);
    const int times = blocked_times(db, run_id);
    CHECK(times >= 2);
    CHECK(times <= 4);  // 300 ms, then 600, 1200: a loop would be thousands
    CHECK(log.count("is blocked, not failed") == 1);
    // Nothing of the diverging replays went in: the journal is as v1 left it, and no 'add' task.
    CHECK(db.count("SELECT next_seq FROM {s}.workflows WHERE run_id = '" + run_id.str() + "'") == journal_before);
    CHECK(db.count("SELECT count(*) FROM {s}.tasks WHERE name = 'add'") == 0);
    CHECK(db.count("SELECT count(*) FROM {s}.workflows WHERE status = 'failed'") == 0);
  }
  // Version 1 brought back: an engine of another app version takes the run on at once, through
  // its sweep (the next try by the clock is put an hour away) and finishes it.
  db.query("UPDATE {s}.workflows SET wake_at = {s}.db_now() + interval '1 hour' WHERE run_id = '" + run_id.str() + "'");
  Engine v1(versioned(db, "v1"));
  add_version<OrderV1>(v1);
  v1.start();
  CHECK(v1.workflow<OrderV1>("order-1").result(5s) == "x!");
  const RunInfo done = v1.runs().get(run_id);
  CHECK_FALSE(done.blocked);
  CHECK_FALSE(done.blocked_by);
  CHECK(done.app_version == "v1");
  CHECK(v1.metrics().workflows_blocked == 0);
}

TEST_CASE("under on_nondeterminism = fail, changed workflow code fails the run and writes no task",
          "[pg][versioning][nondeterminism]") {
  TestDb db;
  const RunId run_id = start_under_v1(db, "fails");
  EngineOptions fail = versioned(db, "v2");
  fail.on_nondeterminism = OnNondeterminism::fail;
  Engine v2(fail);
  add_version<OrderV2>(v2);
  v2.start();
  auto run = v2.workflow<OrderV2>("fails");
  expect_throw<NonDeterminismError>([&] { run.result(30s); }, "'fails'", "sequence number 0",
                                    "journal holds activity 'echo'", "asked for activity 'add'");
  CHECK(run.status() == WorkflowStatus::failed);
  CHECK_FALSE(v2.runs().get(run_id).blocked);
  CHECK(db.count("SELECT count(*) FROM {s}.journal_events WHERE run_id = '" + run_id.str() +
                 "' AND kind = 'activity_scheduled'") == 1);  // only v1's echo
  CHECK(db.count("SELECT count(*) FROM {s}.tasks WHERE status <> 'cancelled'") == 0);
}

TEST_CASE("resuming a blocked run lets a fixed build of the same app version take it on now, audited",
          "[pg][versioning][blocked][runs]") {
  TestDb db;
  const RunId run_id = start_under_v1(db, "order-2");
  {
    Engine v2(versioned(db, "v2", 10s));  // its retries are 10 s apart and more
    add_version<OrderV2>(v2);
    v2.start();
    REQUIRE(wait_until([&] { return v2.runs().get(run_id).blocked; }));
  }
  // A fix under the same app version: it does not take runs its version blocked on its own.
  Engine fixed(versioned(db, "v2"));
  add_version<OrderV2Patched>(fixed);
  fixed.start();
  std::this_thread::sleep_for(500ms);
  CHECK(fixed.runs().get(run_id).blocked);
  CHECK(fixed.runs().resume(run_id, {"ops", "deployed the patched build"}).run_id() == run_id);
  CHECK(fixed.workflow<OrderV2Patched>("order-2").result(5s) == "x!");  // the old path
  const auto audit = fixed.runs().audit({.limit = 1});
  REQUIRE(audit.size() == 1);
  CHECK(audit[0].action == "resume");
  CHECK(audit[0].details.at("blocked").at("asked") == "activity 'add'");
  // A run neither blocked nor failed is not resumed.
  expect_throw<InvalidRunState>(
      [&] {
        fixed.runs().resume(run_id, {"ops", "again"});
      },
      "only a failed or blocked run can be resumed");
}

TEST_CASE("with the change patched, runs in flight keep their old path and new runs take the new one",
          "[pg][versioning][patched]") {
  TestDb db;
  const RunId old_run = start_under_v1(db, "old");
  Engine v2(versioned(db, "v2"));
  add_version<OrderV2Patched>(v2);
  v2.start();
  CHECK(v2.workflow<OrderV2Patched>("old").result(10s) == "x!");
  auto fresh = v2.start_workflow<OrderV2Patched>("new", "y");
  REQUIRE(wait_until([&] {
    return db.count(
               "SELECT count(*) FROM {s}.journal_events j JOIN {s}.workflows w USING (run_id) "
               "WHERE w.workflow_id = 'new' AND j.kind = 'timer_started'") == 1;
  }));
  testing::advance_clock(db.url(), db.schema(), 2h);
  CHECK(fresh.result(10s) == "y3");
  // The marker is the new run's step 0; the old run has none.
  CHECK(db.count("SELECT count(*) FROM {s}.journal_events j JOIN {s}.workflows w USING (run_id) "
                 "WHERE w.workflow_id = 'new' AND j.kind = 'patched' AND j.step = 0 AND j.name = 'add-first'") == 1);
  CHECK(db.count("SELECT count(*) FROM {s}.journal_events WHERE run_id = '" + old_run.str() +
                 "' AND kind = 'patched'") == 0);
  CHECK(db.count("SELECT count(*) FROM {s}.workflows WHERE status <> 'completed'") == 0);
}

TEST_CASE("a run records the app version of the engine that started it, then of each that replayed it",
          "[pg][versioning][runs]") {
  TestDb db;
  Engine client(versioned(db, "release-7"));  // starts runs, runs none
  add_version<OrderV1>(client);
  const RunId run_id = client.start_workflow<OrderV1>("versions", "x").run_id();
  CHECK(client.runs().get(run_id).app_version == "release-7");
  {
    Engine worker(versioned(db, "release-8"));
    add_version<OrderV1>(worker);
    worker.start();
    REQUIRE(wait_until([&] { return worker.runs().get(run_id).app_version == "release-8"; }));
  }
  CHECK(client.runs().list({.filter = {.app_version = "release-8"}}).runs.size() == 1);
  CHECK(client.runs().list({.filter = {.app_version = "release-7"}}).runs.empty());
  CHECK(client.runs().list({.filter = {.app_version = ""}}).runs.empty());
  expect_throw<InvalidOptions>([&] { Engine bad(versioned(db, std::string(256, 'v'))); }, "app_version",
                               "the limit is 255 bytes");
}

TEST_CASE("an exported history replays against the code that made it and diverges against changed code",
          "[pg][versioning][replay_check]") {
  TestDb db;
  const RunId run_id = start_under_v1(db, "exported");
  Engine reader(db.options());  // never started
  const Json history = reader.runs().export_history(run_id);
  CHECK(history.at("format") == "durable.history");
  CHECK(history.at("version") == 1);
  CHECK(history.at("workflow_id") == "exported");
  CHECK(history.at("workflow_name") == "versioned");
  CHECK(history.at("app_version") == "v1");
  REQUIRE(history.at("events").size() == 4);  // started, echo scheduled and completed, timer started
  CHECK(history.at("events")[0].at("kind") == "workflow_started");

  Engine v1_code(db.options());
  add_version<OrderV1>(v1_code);
  const auto same = testing::replay(history, v1_code);
  CHECK(same.ok());
  CHECK(same.run_id == run_id);

  Engine v2_code(db.options());
  add_version<OrderV2>(v2_code);
  const auto changed = testing::replay(history, v2_code);
  REQUIRE_FALSE(changed.ok());
  CHECK(changed.divergence->step == 0);
  CHECK(changed.divergence->journaled == "activity 'echo'");
  CHECK(changed.divergence->asked == "activity 'add'");

  Engine patched_code(db.options());
  add_version<OrderV2Patched>(patched_code);
  CHECK(testing::replay(history, patched_code).ok());
}

TEST_CASE("a replay check of live runs reads through a read-only session and writes nothing",
          "[pg][versioning][replay_check]") {
  TestDb db;
  start_under_v1(db, std::vector<std::string>{"live-1", "live-2"});
  const auto snapshot = [&] {
    return db
        .query(
            "SELECT string_agg(run_id::text || status || next_seq || updated_at::text, ',' ORDER BY run_id) "
            "FROM {s}.workflows")[0][0]
        .as<std::string>();
  };
  const std::string before = snapshot();
  Engine v2_code(db.options());
  add_version<OrderV2>(v2_code);
  const auto report = testing::check_replay(db.url(), db.schema(), v2_code);
  CHECK(report.replayed == 2);
  CHECK(report.divergent.size() == 2);
  CHECK_FALSE(report.ok());
  Engine v1_code(db.options());
  add_version<OrderV1>(v1_code);
  const auto fine = testing::check_replay(db.url(), db.schema(), v1_code, {.sample = 1});
  CHECK(fine.replayed == 1);
  CHECK(fine.ok());
  CHECK(snapshot() == before);  // nothing moved: not even the blocked columns

  // A schema behind this build is refused, not migrated.
  TestDb old;
  pqxx::connection conn(old.url());
  pg::migrate(conn, old.schema(), pg::latest_schema_version() - 1);
  expect_throw<DatabaseError>([&] { testing::check_replay(old.url(), old.schema(), v1_code); },
                              "but this build reads version");
  CHECK(old.count("SELECT max(version) FROM {s}.schema_version") == pg::latest_schema_version() - 1);
  expect_throw<InvalidArgument>([&] { testing::check_replay(db.url(), db.schema(), v1_code, {.sample = 0}); },
                                "sample 0 is out of range");
}

TEST_CASE("a history that is not JSON, of an unknown version or of a workflow not registered is a typed error",
          "[pg][versioning][replay_check][bad_input]") {
  TestDb db;
  Engine code(db.options());
  add_version<OrderV1>(code);
  const auto dir = std::filesystem::temp_directory_path() / testing::unique_schema("histories");
  std::filesystem::create_directories(dir);
  { std::ofstream(dir / "broken.json") << "{\"format\": \"durable.history\", "; }
  expect_throw<InvalidHistory>([&] { testing::replay_file(dir / "broken.json", code); }, "broken.json",
                               "is not valid JSON");
  expect_throw<InvalidHistory>([&] { testing::replay_file(dir / "missing.json", code); }, "cannot be read");
  std::filesystem::remove_all(dir);

  const Json started = {{"seq", 0},   {"kind", "workflow_started"}, {"step", -1}, {"name", ""},
                        {"at_us", 0}, {"data", {{"input", "x"}}}};
  Json history = {{"format", "durable.history"},
                  {"version", 1},
                  {"workflow_id", "w"},
                  {"run_id", "r"},
                  {"workflow_name", "versioned"},
                  {"status", "running"},
                  {"events", Json::array({started})}};
  CHECK(testing::replay(history, code).ok());
  Json future = history;
  future["version"] = 2;
  expect_throw<InvalidHistory>([&] { testing::replay(future, code); }, "history format version 2 is unknown");
  expect_throw<InvalidHistory>(
      [&] {
        testing::replay(Json{{"events", Json::array()}}, code);
      },
      "not an exported history");
  Json other = history;
  other["workflow_name"] = "not_registered";
  expect_throw<UnknownWorkflow>([&] { testing::replay(other, code); }, "'not_registered'", "does not register");
  Json odd = history;
  odd["events"].push_back({{"seq", 1}, {"kind", "no_such_kind"}, {"step", 0}});
  expect_throw<InvalidHistory>([&] { testing::replay(odd, code); }, "malformed at event 1");
}

namespace {
// Reads the clock and sleeps: the replay turns the history's times into a time_point and a
// deadline, so a time beyond what a clock holds must be refused at import, not overflow there.
struct ReadsTheClock {
  static constexpr auto name = "reads_the_clock";
  std::int64_t operator()(WorkflowContext& ctx, const std::string&) {
    const auto at = ctx.now();
    ctx.sleep(1h);
    return std::chrono::duration_cast<std::chrono::seconds>(at.time_since_epoch()).count();
  }
};
}  // namespace

TEST_CASE("a history whose times are beyond what a clock holds is a typed error, not an overflow",
          "[pg][versioning][replay_check][bad_input]") {
  TestDb db;
  Engine code(db.options());
  code.add<ReadsTheClock>();
  // The latest microsecond a std::chrono::system_clock::time_point holds (the year 2262).
  const std::int64_t last_us =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::duration::max()).count();
  const auto history = [](std::int64_t at_us, Json later) {
    Json events = Json::array({{{"seq", 0},
                                {"kind", "workflow_started"},
                                {"step", -1},
                                {"name", ""},
                                {"at_us", at_us},
                                {"data", {{"input", "x"}}}}});
    if (!later.is_null()) events.push_back(std::move(later));
    return Json{
        {"format", "durable.history"},        {"version", 1},        {"workflow_id", "w"},         {"run_id", "r"},
        {"workflow_name", "reads_the_clock"}, {"status", "running"}, {"events", std::move(events)}};
  };
  CHECK(testing::replay(history(last_us - 3'600'000'000LL * 24 * 365 * 101, nullptr), code).ok());
  expect_throw<InvalidHistory>([&] { testing::replay(history(last_us + 1, nullptr), code); }, "its at_us is",
                               "malformed at event 0");
  expect_throw<InvalidHistory>(
      [&] { testing::replay(history(std::numeric_limits<std::int64_t>::max(), nullptr), code); }, "its at_us is");
  const Json now_step = {{"seq", 1},   {"kind", "side_effect"},           {"step", 0}, {"name", "now"},
                         {"at_us", 0}, {"data", {{"value", last_us + 1}}}};
  expect_throw<InvalidHistory>([&] { testing::replay(history(0, now_step), code); }, "data.value",
                               "malformed at event 1");
  const Json timer = {
      {"seq", 1},   {"kind", "timer_started"},
      {"step", 1},  {"name", ""},
      {"at_us", 0}, {"data", {{"fire_at_us", std::numeric_limits<std::int64_t>::max()}, {"duration_ms", 1}}}};
  expect_throw<InvalidHistory>([&] { testing::replay(history(0, timer), code); }, "data.fire_at_us");
}

namespace {
struct FiveSteps {
  static constexpr auto name = "five_steps";
  int operator()(WorkflowContext& ctx, int n) {
    int total = 0;
    for (int step = 0; step < 5; ++step) {
      ctx.logger().info("five_steps: step {} of run with n = {}", step, n);
      total += ctx.call<AddActivity>(Pair{total, n});
    }
    ctx.logger().info("five_steps: done");
    return total;
  }
};
// Two activities at once, the shorter awaited first: the replay that gets the second one's result
// re-runs the line logged after the first (which an earlier replay logged) without writing it.
struct TwoAtOnce {
  static constexpr auto name = "two_at_once";
  int operator()(WorkflowContext& ctx, int) {
    auto quick = ctx.start<SlowActivity>(10);
    auto slow = ctx.start<SlowActivity>(800);
    const int a = quick.get();
    ctx.logger().info("two_at_once: the quick one is done");
    const int b = slow.get();
    ctx.logger().info("two_at_once: both are done");
    return a + b;
  }
};
}  // namespace

TEST_CASE("a workflow that logs at each of its 5 steps, replayed after every step, logs each line once",
          "[pg][versioning][logging]") {
  Captured log(spdlog::default_logger());
  const auto level = spdlog::default_logger()->level();
  spdlog::default_logger()->set_level(spdlog::level::info);
  {
    RunningEngine fixture({}, [](Engine& e) { e.add<FiveSteps>().add<TwoAtOnce>(); });
    CHECK(fixture.engine.start_workflow<FiveSteps>("logs-once", 1).result(10s) == 31);
    CHECK(fixture.engine.start_workflow<TwoAtOnce>("two-at-once", 0).result(10s) == 810);
    // Each step's outcome made the code run again from the top: 6 replays at least.
    CHECK(fixture.db.count("SELECT count(*) FROM {s}.journal_events j JOIN {s}.workflows w USING (run_id) WHERE "
                           "w.workflow_id = 'logs-once' AND j.kind = 'activity_completed'") == 5);
  }
  spdlog::default_logger()->set_level(level);
  for (int step = 0; step < 5; ++step) {
    CHECK(log.count(fmt::format("[logs-once] five_steps: step {} of run", step)) == 1);
  }
  CHECK(log.count("[logs-once] five_steps: done") == 1);
  CHECK(log.count("[two-at-once] two_at_once: the quick one is done") == 1);
  CHECK(log.count("[two-at-once] two_at_once: both are done") == 1);
}

namespace {
// Starts an activity it never awaits, takes another step, and ends (failing while `fails` holds):
// the final replay must not leave a gap where the unawaited activity's step was.
std::atomic<bool> forgetful_fails{true};
struct ForgetsThenEnds {
  static constexpr auto name = "forgets_then_ends";
  std::string operator()(WorkflowContext& ctx, const std::string& s) {
    (void)ctx.start<EchoActivity>(s);  // step 0, never awaited
    (void)ctx.now();                   // step 1
    if (forgetful_fails) throw std::runtime_error("gave up");
    return "done";
  }
};
}  // namespace

TEST_CASE("a run that ended with an unawaited activity keeps its steps consecutive for resume and fork and replay",
          "[pg][versioning][replay_check][unawaited]") {
  forgetful_fails = true;
  RunningEngine env({}, [](Engine& e) { e.add<ForgetsThenEnds>(); });
  auto failed = env.engine.start_workflow<ForgetsThenEnds>("forgets-1", "x");
  CHECK_THROWS_AS(failed.result(10s), WorkflowFailed);
  CHECK(env.db.count("SELECT count(*) FROM {s}.tasks t JOIN {s}.workflows w USING (run_id) "
                     "WHERE w.workflow_id = 'forgets-1' AND t.status IN ('pending', 'running')") == 0);

  // The replay check reads it, and the code replays it.
  const auto report = testing::check_replay(env.db.url(), env.db.schema(), env.engine, {.filter = {}});
  CHECK(report.replayed == 1);
  CHECK(report.ok());
  // A fork after its last step reads it; the unawaited activity runs in the copy.
  const OperatorAction action{.actor = "test", .reason = "gap"};
  auto forked = env.engine.runs().fork(failed.run_id(), 2, action, {.workflow_id = "forgets-fork"});
  CHECK_THROWS_AS(forked.result_json(10s), WorkflowFailed);
  // A resume reads it and, the code fixed, completes.
  forgetful_fails = false;
  auto resumed = env.engine.runs().resume(failed.run_id(), action);
  CHECK(resumed.result_json(10s) == "done");
  // Its unawaited activity was scheduled again: it either ran before the run ended (a completed
  // task's row is deleted) or was dropped again. Which one is a race; that none is left is not.
  CHECK(env.db.count(fmt::format("SELECT count(*) FROM {{s}}.tasks WHERE run_id = '{}' AND status IN ('pending', "
                                 "'running')",
                                 failed.run_id())) == 0);
  forgetful_fails = true;
}

TEST_CASE("a replay check reports a run whose journal it cannot read as that run's result and checks the rest",
          "[pg][versioning][replay_check]") {
  TestDb db;
  start_under_v1(db, std::vector<std::string>{"readable", "unreadable"});
  // A journal no build of durable wrote: its second step is journaled out of order.
  db.query(
      "UPDATE {s}.journal j SET step = 7 FROM {s}.workflows w WHERE w.run_id = j.run_id AND "
      "w.workflow_id = 'unreadable' AND j.seq = (SELECT max(seq) FROM {s}.journal k WHERE k.run_id = j.run_id)");
  Engine v1_code(db.options());
  add_version<OrderV1>(v1_code);
  const auto report = testing::check_replay(db.url(), db.schema(), v1_code);
  CHECK(report.replayed == 1);
  CHECK(report.divergent.empty());
  REQUIRE(report.unreadable.size() == 1);
  CHECK(report.unreadable[0].workflow_id == "unreadable");
  REQUIRE(report.unreadable[0].unreadable);
  CHECK_THAT(*report.unreadable[0].unreadable, Catch::Contains("step 7"));
  CHECK_FALSE(report.ok());
}
