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
#include <string>
#include <vector>

#include "durable/audit.hpp"
#include "durable/detail/payload.hpp"
#include "durable/ids.hpp"
#include "durable/options.hpp"
#include "durable/schedule_records.hpp"

namespace durable {

namespace detail {
class EngineCore;
}

// Managing schedules, from Engine::schedules(). Every call validates before it writes: bad
// input throws InvalidCronExpression, UnknownTimeZone, InvalidSchedule, UnknownWorkflow or
// PayloadError and writes nothing. The schedule runs on every started engine of the schema.
class Engine;

class Schedules {
 public:
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
  friend class Engine;  // Engine::schedules()
  explicit Schedules(detail::EngineCore& core) : core_(core) {}
  detail::EngineCore& core_;
};

// The workflow id a schedule's fire gets: `{schedule id}:{nominal time in its zone with offset}`.
// Throws UnknownTimeZone.
WorkflowId scheduled_workflow_id(const std::string& schedule_id, const std::string& time_zone,
                                 std::chrono::system_clock::time_point nominal);

}  // namespace durable
