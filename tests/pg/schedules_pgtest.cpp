// Schedules against a real PostgreSQL, with the time-skipping clock: exactly one run per
// nominal fire time, the misfire policies, DST, and bad input that writes nothing.
#include <date/date.h>
#include <catch2/catch.hpp>

#include <cstdio>
#include <memory>

#include "support/expect.hpp"
#include "support/test_db.hpp"

using namespace std::chrono_literals;
using durable::Json;
using durable::MisfirePolicy;
using durable::ScheduleSpec;
using durable::test::expect_throw;
using durable::test::TestDb;
using durable::test::wait_until;
using TimePoint = std::chrono::system_clock::time_point;

namespace {

// Gives back what the schedule told it, so tests can read each run's context.
struct Report {
  static constexpr auto name = "report";
  Json operator()(durable::WorkflowContext& ctx, const Json& input) {
    auto s = ctx.schedule();
    if (!s) return {{"scheduled", false}};
    auto us = [](TimePoint t) {
      return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
    };
    return {{"scheduled", true},
            {"id", s->schedule_id},
            {"nominal_us", us(s->nominal_time)},
            {"window_start_us", us(s->window_start)},
            {"window_end_us", us(s->window_end)},
            {"fires", s->fires},
            {"input", input}};
  }
};

TimePoint at(const std::string& iso_utc) {  // "2027-01-10T10:30:00", UTC
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
  REQUIRE(std::sscanf(iso_utc.c_str(), "%d-%d-%dT%d:%d:%d", &y, &mo, &d, &h, &mi, &s) == 6);
  return TimePoint{date::sys_days{date::year{y} / mo / d}} + std::chrono::hours{h} + std::chrono::minutes{mi} +
         std::chrono::seconds{s};
}

std::int64_t us(TimePoint t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
}

std::unique_ptr<durable::Engine> engine_on(const TestDb& db, const std::string& instance = "default") {
  auto options = db.options();
  options.instance = instance;
  auto engine = std::make_unique<durable::Engine>(options);
  engine->add<Report>();
  return engine;
}

ScheduleSpec hourly(MisfirePolicy policy = MisfirePolicy::skip) {
  return {.workflow = Report::name, .input = Json{{"team", "ops"}}, .cron = "0 * * * *", .misfire = policy};
}

// The ids of the runs a schedule started, in order.
std::vector<std::string> schedule_runs(const TestDb& db, const std::string& schedule_id) {
  std::vector<std::string> ids;
  for (const auto& r : db.query("SELECT workflow_id FROM {s}.workflows WHERE workflow_id LIKE '" + schedule_id +
                                ":%' ORDER BY workflow_id")) {
    ids.push_back(r[0].as<std::string>());
  }
  return ids;
}

// Waits until no active schedule is due by the database clock: the scheduler caught up.
void settle(const TestDb& db) {
  REQUIRE(wait_until([&] {
    return db.count("SELECT count(*) FROM {s}.schedules WHERE NOT paused AND next_fire_at <= {s}.db_now()") == 0;
  }));
}

Json result_of(durable::Engine& engine, const std::string& workflow_id) {
  return engine.workflow<Report>(workflow_id).result(std::chrono::seconds{30});
}

}  // namespace

TEST_CASE("schedules are created, read, updated, paused, resumed and removed", "[schedules]") {
  TestDb db;
  auto engine = engine_on(db);
  engine->start();
  durable::testing::set_clock(db.url(), db.schema(), at("2027-01-10T10:30:00"));
  auto& schedules = engine->schedules();
  schedules.create("hourly", hourly());

  auto info = schedules.get("hourly");
  CHECK(info.id == "hourly");
  CHECK(info.spec.cron == "0 * * * *");
  CHECK(info.spec.input == Json{{"team", "ops"}});
  CHECK(info.spec.time_zone == "UTC");
  CHECK(info.spec.misfire == MisfirePolicy::skip);
  CHECK(info.spec.catchup_limit == 10);
  CHECK(info.spec.misfire_grace == 60s);
  CHECK_FALSE(info.paused);
  CHECK(info.next_fire == at("2027-01-10T11:00:00"));

  expect_throw<durable::ScheduleAlreadyExists>([&] { schedules.create("hourly", hourly()); }, "'hourly'",
                                               "exists already");

  auto daily = hourly(MisfirePolicy::compress);
  daily.cron = "@daily";
  daily.time_zone = "Europe/Berlin";
  schedules.update("hourly", daily);
  info = schedules.get("hourly");
  CHECK(info.spec.misfire == MisfirePolicy::compress);
  CHECK(info.next_fire == at("2027-01-10T23:00:00"));  // midnight in Berlin (UTC+1)

  schedules.create("another", hourly());
  schedules.pause("another");
  auto all = schedules.list();
  REQUIRE(all.size() == 2);
  CHECK(all[0].id == "another");
  CHECK(all[0].paused);
  schedules.resume("another");
  CHECK_FALSE(schedules.get("another").paused);

  schedules.remove("another");
  CHECK(schedules.list().size() == 1);
  for (auto op : std::vector<std::function<void()>>{
           [&] { schedules.get("another"); }, [&] { schedules.pause("another"); }, [&] { schedules.resume("another"); },
           [&] { schedules.remove("another"); }, [&] { schedules.update("another", hourly()); }}) {
    expect_throw<durable::ScheduleNotFound>(op, "no schedule with id 'another'");
  }
}

TEST_CASE("bad schedules are refused with a typed error naming the rule, and write nothing", "[schedules]") {
  TestDb db;
  auto engine = engine_on(db);
  engine->start();  // the schema exists, so the counts below are real
  auto& schedules = engine->schedules();

  auto with = [](auto change) {
    ScheduleSpec spec = hourly();
    change(spec);
    return spec;
  };
  SECTION("cron: wrong field count") {
    expect_throw<durable::InvalidCronExpression>(
        [&] { schedules.create("s", with([](ScheduleSpec& s) { s.cron = "0 * * *"; })); }, "4 fields", "5");
  }
  SECTION("cron: minute out of range") {
    expect_throw<durable::InvalidCronExpression>(
        [&] { schedules.create("s", with([](ScheduleSpec& s) { s.cron = "61 * * * *"; })); }, "minute", "61", "0-59");
  }
  SECTION("cron: month out of range") {
    expect_throw<durable::InvalidCronExpression>(
        [&] { schedules.create("s", with([](ScheduleSpec& s) { s.cron = "0 0 1 13 *"; })); }, "month", "13", "1-12");
  }
  SECTION("cron: step zero") {
    expect_throw<durable::InvalidCronExpression>(
        [&] { schedules.create("s", with([](ScheduleSpec& s) { s.cron = "*/0 * * * *"; })); }, "minute", "at least 1");
  }
  SECTION("cron: never fires") {
    expect_throw<durable::InvalidCronExpression>(
        [&] { schedules.create("s", with([](ScheduleSpec& s) { s.cron = "0 0 30 2 *"; })); }, "never");
  }
  SECTION("unknown time zone") {
    expect_throw<durable::UnknownTimeZone>(
        [&] { schedules.create("s", with([](ScheduleSpec& s) { s.time_zone = "Mars/Olympus"; })); }, "Mars/Olympus");
  }
  SECTION("unknown policy") {
    expect_throw<durable::InvalidSchedule>([&] { durable::parse_misfire_policy("sometimes"); }, "sometimes", "skip",
                                           "catchup", "compress");
    expect_throw<durable::InvalidSchedule>(
        [&] { schedules.create("s", with([](ScheduleSpec& s) { s.misfire = static_cast<MisfirePolicy>(7); })); },
        "misfire", "7");
  }
  SECTION("negative catch-up limit") {
    expect_throw<durable::InvalidSchedule>(
        [&] { schedules.create("s", with([](ScheduleSpec& s) { s.catchup_limit = -1; })); }, "catchup_limit", "-1");
  }
  SECTION("negative grace") {
    expect_throw<durable::InvalidSchedule>(
        [&] { schedules.create("s", with([](ScheduleSpec& s) { s.misfire_grace = -1s; })); }, "misfire_grace", ">= 0");
  }
  SECTION("unknown workflow and bad input") {
    expect_throw<durable::UnknownWorkflow>(
        [&] { schedules.create("s", with([](ScheduleSpec& s) { s.workflow = "nope"; })); }, "nope");
  }
  SECTION("bad schedule ids") {
    for (std::string id : {std::string(), std::string("a:b"), std::string("a\0b", 3), std::string(201, 'x')}) {
      expect_throw<durable::InvalidSchedule>([&] { schedules.create(id, hourly()); }, "schedule id");
    }
  }
  CHECK(db.count("SELECT count(*) FROM {s}.schedules") == 0);
  schedules.create("s", hourly());  // and a good one is written
  CHECK(db.count("SELECT count(*) FROM {s}.schedules") == 1);
}

TEST_CASE("an on-time schedule starts one run per tick, with its window and input", "[schedules]") {
  TestDb db;
  auto engine = engine_on(db);
  engine->start();
  durable::testing::set_clock(db.url(), db.schema(), at("2027-01-10T10:30:00"));
  engine->schedules().create("hourly", hourly());

  durable::testing::advance_clock(db.url(), db.schema(), 30min);  // exactly on the 11:00 tick
  settle(db);
  durable::testing::advance_clock(db.url(), db.schema(), 1h + 20s);  // 12:00, 20 s late: within the grace
  settle(db);
  REQUIRE(schedule_runs(db, "hourly") ==
          std::vector<std::string>{"hourly:2027-01-10T11:00:00+00:00", "hourly:2027-01-10T12:00:00+00:00"});
  Json second = result_of(*engine, "hourly:2027-01-10T12:00:00+00:00");
  CHECK(second["id"] == "hourly");
  CHECK(second["nominal_us"] == us(at("2027-01-10T12:00:00")));
  CHECK(second["window_start_us"] == us(at("2027-01-10T11:00:00")));
  CHECK(second["window_end_us"] == us(at("2027-01-10T12:00:00")));
  CHECK(second["fires"] == 1);
  CHECK(second["input"] == Json{{"team", "ops"}});
  // The very first fire's window starts at the cron time before it, though nothing fired then.
  CHECK(result_of(*engine, "hourly:2027-01-10T11:00:00+00:00")["window_start_us"] == us(at("2027-01-10T10:00:00")));
  auto info = engine->schedules().get("hourly");
  CHECK(info.fires_started == 2);
  CHECK(info.fires_dropped == 0);
  CHECK(info.next_fire == at("2027-01-10T13:00:00"));

  SECTION("a paused schedule fires nothing; on resume its passed fires are misfires") {
    engine->schedules().pause("hourly");
    durable::testing::advance_clock(db.url(), db.schema(), 3h + 2min);  // 13:00, 14:00, 15:00 pass while paused
    std::this_thread::sleep_for(300ms);
    CHECK(schedule_runs(db, "hourly").size() == 2);
    engine->schedules().resume("hourly");
    settle(db);
    CHECK(schedule_runs(db, "hourly").size() == 2);  // skip: dropped
    CHECK(engine->schedules().get("hourly").fires_dropped == 3);
  }
}

TEST_CASE("misfires while every engine is down follow the schedule's policy", "[schedules]") {
  struct Case {
    MisfirePolicy policy;
    int limit;
    std::vector<std::string> hours;  // the nominal hours (UTC, 2027-01-10) that start runs
    std::int64_t dropped;
  };
  auto [policy, limit, hours, dropped] =
      GENERATE(Case{MisfirePolicy::skip, 10, {}, 10},
               Case{MisfirePolicy::catchup, 10, {"11", "12", "13", "14", "15", "16", "17", "18", "19", "20"}, 0},
               Case{MisfirePolicy::catchup, 3, {"18", "19", "20"}, 7}, Case{MisfirePolicy::compress, 10, {"20"}, 0});
  CAPTURE(durable::to_string(policy), limit);
  TestDb db;
  {
    auto creator = engine_on(db);  // never started: no engine runs while the ticks pass
    creator->schedules().list();   // migrates the schema, so its clock can be set
    durable::testing::set_clock(db.url(), db.schema(), at("2027-01-10T10:30:00"));
    auto spec = hourly(policy);
    spec.catchup_limit = limit;
    creator->schedules().create("tick", spec);
  }
  durable::testing::advance_clock(db.url(), db.schema(), 10h);  // 20:30: ticks 11:00 .. 20:00 were missed

  auto engine = engine_on(db);
  engine->start();
  settle(db);
  std::vector<std::string> expected;
  for (const auto& h : hours) expected.push_back("tick:2027-01-10T" + h + ":00:00+00:00");
  CHECK(schedule_runs(db, "tick") == expected);
  auto info = engine->schedules().get("tick");
  CHECK(info.fires_dropped == dropped);
  CHECK(info.fires_started == static_cast<std::int64_t>(expected.size()));
  CHECK(info.next_fire == at("2027-01-10T21:00:00"));

  for (const auto& id : expected) {
    Json r = result_of(*engine, id);
    if (policy == MisfirePolicy::compress) {
      CHECK(r["fires"] == 10);
      CHECK(r["window_start_us"] == us(at("2027-01-10T10:00:00")));  // the start of the first missed interval
      CHECK(r["window_end_us"] == us(at("2027-01-10T20:00:00")));    // the last missed nominal time
    } else {
      CHECK(r["fires"] == 1);
      CHECK(r["window_end_us"].get<std::int64_t>() - r["window_start_us"].get<std::int64_t>() == us(TimePoint{1h}));
    }
  }

  // Back on time: the next tick is one ordinary run whatever the policy.
  durable::testing::advance_clock(db.url(), db.schema(), 30min);
  settle(db);
  Json next = result_of(*engine, "tick:2027-01-10T21:00:00+00:00");
  CHECK(next["fires"] == 1);
  CHECK(next["window_start_us"] == us(at("2027-01-10T20:00:00")));
}

TEST_CASE("three engines firing one schedule start each of 20 ticks exactly once", "[schedules]") {
  TestDb db;
  std::vector<std::unique_ptr<durable::Engine>> engines;
  for (int i = 0; i < 3; ++i) engines.push_back(engine_on(db, "engine-" + std::to_string(i)));
  engines[0]->schedules().list();  // migrates the schema, so its clock can be set
  durable::testing::set_clock(db.url(), db.schema(), at("2027-01-10T10:30:00"));
  engines[0]->schedules().create("tick", hourly());
  for (auto& e : engines) e->start();

  std::vector<std::string> expected;
  TimePoint tick = at("2027-01-10T11:00:00");
  durable::testing::advance_clock(db.url(), db.schema(), 30min);
  for (int i = 0; i < 20; ++i, tick += 1h) {
    settle(db);  // every engine was woken by the clock; one of them fired the tick
    expected.push_back(durable::scheduled_workflow_id("tick", "UTC", tick).str());
    durable::testing::advance_clock(db.url(), db.schema(), 1h);
  }
  settle(db);
  expected.push_back(durable::scheduled_workflow_id("tick", "UTC", tick).str());
  std::sort(expected.begin(), expected.end());
  CHECK(schedule_runs(db, "tick") == expected);
  CHECK(db.count("SELECT count(*) FROM {s}.workflows WHERE workflow_id LIKE 'tick:%' AND started_by = 'schedule' AND "
                 "origin = 'tick'") == 21);
  CHECK(db.count("SELECT count(*) FROM {s}.journal_events WHERE kind = 'workflow_started'") == 21);
  auto info = engines[0]->schedules().get("tick");
  CHECK(info.fires_started == 21);
  CHECK(info.fires_dropped == 0);
  REQUIRE(wait_until([&] { return db.count("SELECT count(*) FROM {s}.workflows WHERE status = 'completed'") == 21; }));
}

TEST_CASE("a fire delivered twice starts one run", "[schedules]") {
  TestDb db;
  auto engine = engine_on(db);
  engine->start();
  durable::testing::set_clock(db.url(), db.schema(), at("2027-01-10T10:30:00"));
  engine->schedules().create("tick", hourly());
  durable::testing::advance_clock(db.url(), db.schema(), 30min);
  settle(db);
  const std::string id = "tick:2027-01-10T11:00:00+00:00";
  REQUIRE(schedule_runs(db, "tick") == std::vector<std::string>{id});
  const durable::RunId run_id = engine->workflow(id).run_id();

  // As an engine with a stale view would: the schedule is set back to the tick it just fired.
  db.query("UPDATE {s}.schedules SET next_fire_at = '2027-01-10T11:00:00Z', prev_fire_at = '2027-01-10T10:00:00Z'");
  durable::testing::advance_clock(db.url(), db.schema(), 1s);  // wakes the scheduler
  settle(db);
  CHECK(schedule_runs(db, "tick") == std::vector<std::string>{id});
  CHECK(engine->workflow(id).run_id() == run_id);
  CHECK(db.count("SELECT count(*) FROM {s}.workflows") == 1);
  CHECK(engine->schedules().get("tick").fires_started == 1);  // counts runs started, not attempts

  // And a start by hand under the fire's id finds the run instead of starting one.
  auto outcome = engine->start_or_find("report", id, Json{{"team", "ops"}});
  CHECK_FALSE(outcome.started);
  CHECK(outcome.run.run_id() == run_id);
}

TEST_CASE("daylight saving time: skipped local times fire at the first valid instant, repeated ones once",
          "[schedules]") {
  struct Case {
    std::string cron, from, to;
    std::vector<std::string> ids;
  };
  auto [cron, from, to, ids] = GENERATE(
      Case{"30 2 * * *",
           "2026-03-07T12:00:00",
           "2026-03-10T12:00:00",
           {"dst:2026-03-08T03:00:00-04:00", "dst:2026-03-09T02:30:00-04:00", "dst:2026-03-10T02:30:00-04:00"}},
      Case{"30 1 * * *",
           "2026-10-31T12:00:00",
           "2026-11-03T12:00:00",
           {"dst:2026-11-01T01:30:00-04:00", "dst:2026-11-02T01:30:00-05:00", "dst:2026-11-03T01:30:00-05:00"}});
  CAPTURE(cron);
  TestDb db;
  auto engine = engine_on(db);
  engine->start();
  durable::testing::set_clock(db.url(), db.schema(), at(from));
  ScheduleSpec spec = hourly();
  spec.cron = cron;
  spec.time_zone = "America/New_York";
  spec.misfire_grace = 24h;  // the clock moves in 6-hour jumps: every fire is still on time
  engine->schedules().create("dst", spec);
  for (TimePoint t = at(from); t <= at(to); t += 6h) {
    durable::testing::set_clock(db.url(), db.schema(), t);
    settle(db);
  }
  CHECK(schedule_runs(db, "dst") == ids);
  CHECK(engine->schedules().get("dst").fires_dropped == 0);
}

TEST_CASE("an audited pause, resume or removal writes its audit entry with it, and a refused one writes nothing",
          "[schedules][audit]") {
  TestDb db;
  auto engine = engine_on(db);
  auto& schedules = engine->schedules();
  schedules.create("hourly", hourly());
  const durable::OperatorAction ops{"oncall", "the report source is down"};
  auto entries = [&] { return engine->runs().audit(); };

  expect_throw<durable::InvalidArgument>([&] { schedules.pause("hourly", {"oncall", "  "}); }, "needs a reason");
  CHECK_FALSE(schedules.get("hourly").paused);
  CHECK_THROWS_AS(schedules.pause("no-such", ops), durable::ScheduleNotFound);
  CHECK_THROWS_AS(schedules.remove("no-such", ops), durable::ScheduleNotFound);
  CHECK(entries().empty());

  schedules.pause("hourly", ops);
  CHECK(schedules.get("hourly").paused);
  schedules.resume("hourly", {"oncall", "back"});
  CHECK_FALSE(schedules.get("hourly").paused);
  schedules.pause("hourly");  // the plain calls stay unaudited: a service's own code
  schedules.remove("hourly", {"alice", "replaced by hourly-v2"});
  CHECK(schedules.list().empty());
  const auto audit = entries();
  REQUIRE(audit.size() == 3);
  CHECK(audit[0].action == "schedule_delete");
  CHECK(audit[0].actor == "alice");
  CHECK(audit[0].reason == "replaced by hourly-v2");
  CHECK(audit[0].details.at("schedule_id") == "hourly");
  CHECK(audit[0].workflow_id.empty());
  CHECK(audit[1].action == "schedule_resume");
  CHECK(audit[2].action == "schedule_pause");
  CHECK(audit[2].reason == "the report source is down");
}
