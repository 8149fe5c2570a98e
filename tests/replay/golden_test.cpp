// Golden replay tests (as Temporal's test/replaytests): histories recorded from real runs, kept
// in this folder, replayed against the current workflow code with no database. A change to a
// workflow that breaks the replay of recorded runs fails here, before it is deployed. The
// `bad-*.json` histories were recorded by older code than the one registered under their
// workflow's name: each must diverge, or the check itself is broken.
//
// Record them again (after a change to the history format, say) against a real PostgreSQL:
//   build/tools/durable-postgres -- build/tests/replay_tests "[record]"
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "support/expect.hpp"
#include "support/test_db.hpp"
#include "support/test_workflows.hpp"

using namespace durable;
using namespace durable::test;
using namespace std::chrono_literals;

namespace fs = std::filesystem;

namespace {

// An order, as the versioning example has it: version 1 reserves before it charges, version 2
// (patched) charges first for new runs.
struct OrderV1 {
  static constexpr auto name = "order";
  std::string operator()(WorkflowContext& ctx, const std::string& order) {
    auto reserved = ctx.call<EchoActivity>("reserve " + order);
    ctx.sleep(1h);
    return reserved + ", " + ctx.call<EchoActivity>("charge " + order);
  }
};
struct OrderV2Patched {
  static constexpr auto name = "order";
  std::string operator()(WorkflowContext& ctx, const std::string& order) {
    if (!ctx.patched("charge-first")) return OrderV1{}(ctx, order);
    auto charged = ctx.call<AddActivity>(Pair{10, 5});
    ctx.sleep(1h);
    return std::to_string(charged) + ", " + ctx.call<EchoActivity>("reserve " + order);
  }
};

// The current code of the workflows whose recorded runs must not replay (bad-*.json), and the
// older code that recorded them (used only when recording).
struct StrictOrder {  // version 2 without the patch: version 1's runs diverge at step 0
  static constexpr auto name = "strict_order";
  std::string operator()(WorkflowContext& ctx, const std::string& order) {
    auto charged = ctx.call<AddActivity>(Pair{10, 5});
    ctx.sleep(1h);
    return std::to_string(charged) + ", " + ctx.call<EchoActivity>("reserve " + order);
  }
};
struct StrictOrderV1 {
  static constexpr auto name = "strict_order";
  std::string operator()(WorkflowContext& ctx, const std::string& order) { return OrderV1{}(ctx, order); }
};
struct UnmarkedOrder {  // the patch call removed while runs that journaled its marker were in flight
  static constexpr auto name = "unmarked_order";
  std::string operator()(WorkflowContext& ctx, const std::string& order) { return StrictOrder{}(ctx, order); }
};
struct UnmarkedOrderPatched {
  static constexpr auto name = "unmarked_order";
  std::string operator()(WorkflowContext& ctx, const std::string& order) { return OrderV2Patched{}(ctx, order); }
};
struct GrownHello {  // a call added after the last one: runs that ended would not end the same way
  static constexpr auto name = "grown_hello";
  std::string operator()(WorkflowContext& ctx, const std::string& who) {
    auto greeting = ctx.call<EchoActivity>(who);
    return greeting + ctx.call<EchoActivity>("!");
  }
};
struct GrownHelloV1 {
  static constexpr auto name = "grown_hello";
  std::string operator()(WorkflowContext& ctx, const std::string& who) { return ctx.call<EchoActivity>(who); }
};

// Every workflow whose runs this folder holds, as the current code has it.
void register_current(Engine& engine) {
  engine.add<EchoActivity>().add<AddActivity>().add<BoomActivity>().add<SlowActivity>();
  engine.add<HelloWorkflow>().add<ParallelWorkflow>().add<SleepWorkflow>().add<CatchFailureWorkflow>();
  engine.add<ChainWorkflow>().add<InboxWorkflow>().add<FirstOfWorkflow>().add<ProgressWorkflow>();
  engine.add<FanOutWorkflow>().add<DoubleWorkflow>().add<OrderV2Patched>();
  engine.add<StrictOrder>().add<UnmarkedOrder>().add<GrownHello>();
}

std::vector<fs::path> histories(bool bad) {
  std::vector<fs::path> out;
  for (const auto& entry : fs::directory_iterator(DURABLE_GOLDEN_DIR)) {
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() == ".json" && (name.rfind("bad-", 0) == 0) == bad) out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The code is never run against a database here: no connection is opened.
EngineOptions no_database() { return {.database_url = "postgresql:///durable-golden-replays-use-no-database"}; }

}  // namespace

TEST_CASE("golden histories replay against the current workflow code", "[replay][golden]") {
  Engine code(no_database());
  register_current(code);
  const auto files = histories(false);
  REQUIRE(files.size() >= 10);
  for (const auto& file : files) {
    DYNAMIC_SECTION(file.filename().string()) {
      const auto result = testing::replay_file(file, code);
      INFO((result.divergence ? result.divergence->message : std::string()));
      CHECK(result.ok());
    }
  }
}

TEST_CASE("bad-* golden histories diverge from the current workflow code at the call that changed",
          "[replay][golden]") {
  Engine code(no_database());
  register_current(code);
  const auto files = histories(true);
  REQUIRE(files.size() >= 3);
  for (const auto& file : files) {
    DYNAMIC_SECTION(file.filename().string()) {
      const auto result = testing::replay_file(file, code);
      REQUIRE_FALSE(result.ok());
      CHECK(result.divergence->step >= 0);
      CHECK_FALSE(result.divergence->journaled.empty());
      CHECK_FALSE(result.divergence->asked.empty());
    }
  }
}

namespace {
Json golden(const std::string& name) {
  std::ifstream in(fs::path(DURABLE_GOLDEN_DIR) / (name + ".json"));
  return Json::parse(in);
}
}  // namespace

TEST_CASE("a malformed history is InvalidHistory naming what is wrong, never a cast out of range",
          "[replay][bad-input]") {
  Engine code(no_database());
  register_current(code);
  const auto refused = [&](const Json& history, const std::string& says) {
    expect_throw<InvalidHistory>([&] { testing::replay(history, code); }, says);
  };
  Json h = golden("sleeper");
  REQUIRE(testing::replay(h, code).ok());
  // Numbers a plain conversion would cut short (step 2^32 + 1 as step 1) or could not hold.
  Json e = h;
  e["events"][2]["step"] = 4294967297LL;
  refused(e, "its step is 4294967297: it must be an integer from -1 to 2147483647");
  e = h;
  e["events"][1]["seq"] = 1e20;
  refused(e, "its seq is 1e+20");
  e = h;
  e["events"][2]["data"]["fire_at_us"] = 1e300;
  refused(e, "a timer_started event's field 'fire_at_us' is 1e+300, not an integer");
  e = h;
  e["events"][2]["data"]["fire_at_us"] = 18446744073709551615ULL;
  refused(e, "field 'fire_at_us' is 18446744073709551615, out of range");
  e = h;
  e["events"][2]["data"]["fire_at_us"] = std::numeric_limits<std::int64_t>::max();  // fits, but no clock holds it
  refused(e, "its data.fire_at_us is 9223372036854775807: it must be an integer from");
  e = h;
  e["events"][2]["data"].erase("fire_at_us");  // read by the journal's one reader, as the engine reads it
  refused(e, "a timer_started event's data lacks its field 'fire_at_us'");
  e = h;
  e["events"][1]["data"]["value"] = 1e30;  // the time a `now` side effect journaled
  refused(e, "data.value (a time in microseconds) is 1e+30");
  e = h;
  e["events"][3]["data"] = "fired";
  refused(e, "its data is \"fired\": it must be an object");
  e = h;
  e["events"][0]["at_us"] = -5;
  refused(e, "its at_us is -5");
  // A journaled choice past the futures the code waits on diverges; it is never an index.
  Json chosen = golden("first-of");
  REQUIRE(chosen["events"][4]["kind"] == "wait_chosen");
  chosen["events"][4]["data"]["index"] = 7;
  const auto result = testing::replay(chosen, code);
  REQUIRE_FALSE(result.ok());
  CHECK(result.divergence->journaled == "a wait_any that chose future 7");
}

// Records the histories of this folder from runs against a real PostgreSQL (hidden: run it by
// its tag). Each run is exported when it has ended, or when it waits where the file should
// catch it (an order in its hour-long sleep).
TEST_CASE("record the golden histories", "[.][record]") {
  TestDb db;
  EngineOptions options = db.options();
  options.app_version = "golden";
  Engine engine(options);
  register_current(engine);
  // The older code of the bad-* workflows, under the same names, on engines of their own.
  Engine older(db.options());
  older.add<EchoActivity>().add<AddActivity>().add<UnmarkedOrderPatched>().add<GrownHelloV1>();

  auto write = [&](Engine& by, const std::string& file, const std::string& workflow_id) {
    const Json history = by.runs().export_history(by.runs().latest(workflow_id).run_id);
    std::ofstream(fs::path(DURABLE_GOLDEN_DIR) / file) << history.dump(2) << "\n";
  };
  auto timer_started = [&](const std::string& workflow_id) {
    return wait_until([&] {
      return db.count(
                 "SELECT count(*) FROM {s}.journal_events j JOIN {s}.workflows w USING (run_id) WHERE "
                 "w.workflow_id = '" +
                 workflow_id + "' AND j.kind = 'timer_started'") > 0;
    });
  };
  engine.start();
  engine.start_workflow<HelloWorkflow>("hello", "world").result(10s);
  write(engine, "hello.json", "hello");
  engine.start_workflow<ParallelWorkflow>("parallel", 3).result(10s);
  write(engine, "parallel.json", "parallel");
  auto sleeper = engine.start_workflow<SleepWorkflow>("sleeper", 60'000);
  REQUIRE(timer_started("sleeper"));
  testing::advance_clock(db.url(), db.schema(), 2min);
  sleeper.result(10s);
  write(engine, "sleeper.json", "sleeper");
  engine.start_workflow<CatchFailureWorkflow>("catch-failure", "no").result(10s);
  write(engine, "catch-failure.json", "catch-failure");
  engine.start_workflow<ChainWorkflow>("chain", 1).result(10s);
  write(engine, "chain.json", "chain");
  auto inbox = engine.start_workflow<InboxWorkflow>("inbox", {.count = 2});
  engine.send("inbox", "item", std::string("first"));
  engine.send("inbox", "item", std::string("second"));
  inbox.result(10s);
  write(engine, "inbox.json", "inbox");
  auto first_of = engine.start_workflow<FirstOfWorkflow>("first-of", {.count = 2, .timeout_ms = 3'600'000});
  engine.send("first-of", "item", std::string("in time"));
  REQUIRE(wait_until(
      [&] { return db.count("SELECT count(*) FROM {s}.journal_events WHERE kind = 'timer_started'") >= 3; }));
  testing::advance_clock(db.url(), db.schema(), 2h);
  first_of.result(10s);
  write(engine, "first-of.json", "first-of");
  auto progress = engine.start_workflow<ProgressWorkflow>("progress", 0);
  engine.send("progress", "go", std::string("go"));
  progress.result(10s);
  write(engine, "progress.json", "progress");
  engine.start_workflow<FanOutWorkflow>("fan-out", 3).result(10s);
  write(engine, "fan-out.json", "fan-out");
  write(engine, "fan-out-child.json", "fan-out/2");
  engine.stop();

  // Orders: one of version 1 caught in its sleep, one of the patched version 2.
  Engine v1(db.options());
  v1.add<EchoActivity>().add<OrderV1>().add<StrictOrderV1>();
  v1.start();
  v1.start_workflow<OrderV1>("order-v1", "o-1");
  v1.start_workflow<StrictOrderV1>("strict-order-v1", "o-2");
  REQUIRE(timer_started("order-v1"));
  REQUIRE(timer_started("strict-order-v1"));
  v1.stop();
  write(v1, "order-v1-in-flight.json", "order-v1");
  write(v1, "bad-reordered.json", "strict-order-v1");

  older.start();
  auto patched = older.start_workflow<UnmarkedOrderPatched>("unmarked-order", "o-3");
  REQUIRE(timer_started("unmarked-order"));
  older.start_workflow<GrownHelloV1>("grown-hello", "world").result(10s);
  older.stop();
  write(older, "bad-patch-removed.json", "unmarked-order");
  write(older, "bad-call-after-end.json", "grown-hello");

  Engine v2(db.options());
  v2.add<EchoActivity>().add<AddActivity>().add<OrderV2Patched>();
  v2.start();
  auto order = v2.start_workflow<OrderV2Patched>("order-v2", "o-4");
  REQUIRE(timer_started("order-v2"));
  testing::advance_clock(db.url(), db.schema(), 2h);
  order.result(10s);
  write(v2, "order-v2.json", "order-v2");
}
