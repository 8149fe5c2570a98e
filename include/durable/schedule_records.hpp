// The values of schedules (durable/schedule.hpp): a spec and its misfire policy, a stored schedule, a fire.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "durable/detail/payload.hpp"
#include "durable/options.hpp"

namespace durable {

// What happens to fires whose nominal time passed more than the grace period before any engine
// could fire them (engines down, the schedule paused, the database unreachable).
enum class MisfirePolicy {
  skip,      // dropped (and counted); the schedule carries on with the next future fire
  catchup,   // started oldest first, at most catchup_limit; older ones are dropped and counted
  compress,  // one run stands for all of them: its window spans them, its count says how many
};

// "skip" / "catchup" / "compress", and back; parse_misfire_policy throws InvalidSchedule.
std::string to_string(MisfirePolicy policy);
MisfirePolicy parse_misfire_policy(const std::string& text);

struct ScheduleSpec {
  std::string workflow{};         // a registered workflow's name
  Json input{};                   // its input, the same for every fire
  std::string cron{};             // see durable/cron.hpp
  std::string time_zone = "UTC";  // IANA name the cron expression is read in
  MisfirePolicy misfire = MisfirePolicy::skip;
  int catchup_limit = 10;                             // catchup: most missed fires started, 0..10000
  Duration misfire_grace = std::chrono::seconds{60};  // >= 0: how late a fire may start and still count as on time
};

// A schedule as stored, with its progress.
struct ScheduleInfo {
  std::string id;
  ScheduleSpec spec;
  bool paused = false;
  std::chrono::system_clock::time_point next_fire{};  // the next nominal fire time
  std::int64_t fires_started = 0;                     // runs this schedule started
  std::int64_t fires_dropped = 0;                     // missed fires skipped or beyond the catch-up limit
};

// What a scheduled run stands for; WorkflowContext::schedule() gives it to the workflow.
struct ScheduleContext {
  std::string schedule_id;
  std::chrono::system_clock::time_point nominal_time;  // the fire time this run is for
  std::chrono::system_clock::time_point window_start;  // the previous nominal time (exclusive)
  std::chrono::system_clock::time_point window_end;    // = nominal_time (inclusive)
  std::int64_t fires = 1;                              // > 1 for a compressed catch-up run
};

}  // namespace durable
