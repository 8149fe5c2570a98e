// Schedules: start a workflow on a cron expression in a time zone, from every engine at once,
// each nominal fire time exactly once.
//
// A fire's workflow id is `{schedule id}:{nominal time, ISO-8601 with offset}`, e.g.
// `nightly-report:2026-11-30T02:00:00+01:00`, started under reject-duplicate: a fire delivered
// twice starts one run. The schedule's next fire time advances in the transaction that starts it.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "durable/audit.hpp"
#include "durable/detail/payload.hpp"
#include "durable/options.hpp"

namespace durable {

namespace detail {
class EngineCore;
}

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

// Managing schedules, from Engine::schedules(). Every call validates before it writes: bad
// input throws InvalidCronExpression, UnknownTimeZone, InvalidSchedule, UnknownWorkflow or
// PayloadError and writes nothing. The schedule runs on every started engine of the schema.
class Schedules {
 public:
  explicit Schedules(detail::EngineCore& core) : core_(core) {}

  // The first fire is the first cron instant after now. Throws ScheduleAlreadyExists.
  void create(const std::string& id, const ScheduleSpec& spec);
  // Replaces the spec; the next fire is recomputed from now. Throws ScheduleNotFound.
  void update(const std::string& id, const ScheduleSpec& spec);
  // A paused schedule fires nothing; on resume, the fires it passed are misfires (see the policy).
  void pause(const std::string& id);
  void resume(const std::string& id);
  // Runs it started are left alone. Throws ScheduleNotFound.
  void remove(const std::string& id);
  // The same, audited: who and why go to the audit trail (Runs::audit) in the same transaction,
  // as schedule_pause, schedule_resume or schedule_delete. For operators' tools; an empty reason
  // throws InvalidArgument and writes nothing.
  void pause(const std::string& id, const OperatorAction& action);
  void resume(const std::string& id, const OperatorAction& action);
  void remove(const std::string& id, const OperatorAction& action);
  ScheduleInfo get(const std::string& id);
  std::vector<ScheduleInfo> list();  // ordered by id

 private:
  detail::EngineCore& core_;
};

// The workflow id a schedule's fire gets: `{schedule id}:{nominal time in its zone with offset}`.
// Throws UnknownTimeZone.
std::string scheduled_workflow_id(const std::string& schedule_id, const std::string& time_zone,
                                  std::chrono::system_clock::time_point nominal);

}  // namespace durable
