// Schedules: an hourly report in a time zone, and a compressed catch-up after every engine
// was down for five hours. Time is skipped with the test clock, so the hours pass at once.
//
// Run: build/examples/05-schedules   (a throwaway PostgreSQL unless DURABLE_DATABASE_URL is set)
#include <fmt/chrono.h>
#include <fmt/format.h>
#include <durable/durable.hpp>
#include <durable/testing.hpp>

#include <thread>

using namespace std::chrono_literals;

std::string utc_hhmm(std::chrono::system_clock::time_point t) {
  return fmt::format("{:%H:%M}", fmt::gmtime(std::chrono::system_clock::to_time_t(t)));
}

// [workflow]
struct HourlyReport {
  static constexpr auto name = "hourly_report";
  std::string operator()(durable::WorkflowContext& ctx, const std::string& team) {
    durable::ScheduleContext fire = *ctx.schedule();  // set for runs a schedule started
    return fmt::format("{} report for {} hour(s) of {}, {} to {} UTC", fire.schedule_id, fire.fires, team,
                       utc_hhmm(fire.window_start), utc_hhmm(fire.window_end));
  }
};
// [workflow]

// Waits for the run a fire started and prints what it returned.
std::string run_of_fire(durable::Engine& engine, std::chrono::system_clock::time_point nominal) {
  const durable::WorkflowId id = durable::scheduled_workflow_id("ops-report", "Europe/Berlin", nominal);
  for (int tries = 0;; ++tries) {  // the scheduler starts it a moment after the clock moves
    try {
      std::string report = engine.workflow<HourlyReport>(id).result(30s);
      fmt::print("  {} -> {}\n", id, report);
      return report;
    } catch (const durable::WorkflowNotFound&) {
      if (tries == 300) throw;
      std::this_thread::sleep_for(100ms);
    }
  }
}

int main() {
  const std::string url = durable::testing::database_url();
  const std::string schema = "durable_example_schedules";
  durable::testing::drop_schema(url, schema);
  auto engine = std::make_unique<durable::Engine>(durable::EngineOptions{.database_url = url, .schema = schema});
  engine->add<HourlyReport>();
  engine->start();
  durable::testing::set_clock(url, schema, std::chrono::sys_days{std::chrono::year{2027} / 1 / 10} + 8h + 30min);

  // [create]
  engine->schedules().create("ops-report", {.workflow = HourlyReport::name,
                                            .input = "ops",
                                            .cron = "@hourly",
                                            .time_zone = "Europe/Berlin",
                                            .misfire = durable::MisfirePolicy::compress});
  // [create]
  auto next = engine->schedules().get("ops-report").next_fire;
  fmt::print("the clock reads 09:30 in Berlin; the next fire is at 10:00 there\n");
  durable::testing::advance_clock(url, schema, 30min);
  const std::string on_time = run_of_fire(*engine, next);

  fmt::print("every engine stops; five hourly fires pass while none runs\n");
  engine.reset();
  durable::testing::advance_clock(url, schema, 5h + 10min);

  engine = std::make_unique<durable::Engine>(durable::EngineOptions{.database_url = url, .schema = schema});
  engine->add<HourlyReport>();
  engine->start();  // its scheduler finds the misfires: compress makes them one run
  const std::string compressed = run_of_fire(*engine, next + 5h);
  auto info = engine->schedules().get("ops-report");
  fmt::print("runs started: {}, fires dropped: {}\n", info.fires_started, info.fires_dropped);

  // [operate]
  // An operator pauses it, saying why: the audit trail keeps who, when and why.
  engine->schedules().pause("ops-report", {.actor = "ana", .reason = "the report source is down"});
  const durable::AuditEntry paused = engine->runs().audit({.limit = 1}).at(0);
  // [operate]
  fmt::print("audit: {} of {} by {}: {}\n", paused.action, paused.details.value("schedule_id", "?"), paused.actor,
             paused.reason);
  const bool is_paused = engine->schedules().get("ops-report").paused;

  engine.reset();
  durable::testing::drop_schema(url, schema);
  const bool ok = on_time == "ops-report report for 1 hour(s) of ops, 08:00 to 09:00 UTC" &&
                  compressed == "ops-report report for 5 hour(s) of ops, 09:00 to 14:00 UTC" &&
                  info.fires_started == 2 && paused.action == "schedule_pause" && paused.actor == "ana" && is_paused;
  return ok ? 0 : 1;
}
