#include "durable/schedule.hpp"

#include <fmt/format.h>

#include "base/checks.hpp"
#include "base/printable.hpp"
#include "base/uuid.hpp"
#include "durable/cron.hpp"
#include "durable/errors.hpp"
#include "engine/engine_core.hpp"
#include "schedule/fire_plan.hpp"

namespace durable {

namespace {

constexpr std::size_t max_schedule_id_bytes = 200;
constexpr int max_catchup_limit = 10000;

void check_id(const std::string& id) {
  if (id.empty() || id.size() > max_schedule_id_bytes || id.find(':') != std::string::npos ||
      id.find('\0') != std::string::npos) {
    throw InvalidSchedule(
        fmt::format("schedule id '{}' is invalid: use 1 to {} bytes without ':' or NUL (it "
                    "prefixes the ids of the runs it starts, e.g. \"nightly-report\")",
                    detail::printable(id), max_schedule_id_bytes));
  }
}

// Everything a schedule is checked for before anything is written; returns its calendar.
CronCalendar checked(const detail::Registry& registry, const std::string& id, const ScheduleSpec& spec) {
  check_id(id);
  const auto& workflow = registry.workflow(spec.workflow);  // UnknownWorkflow
  detail::check_payload(spec.input, fmt::format("the input of schedule '{}'", detail::printable(id)));
  workflow.check_input(spec.input);  // PayloadError
  CronCalendar calendar(CronExpression::parse(spec.cron), spec.time_zone);
  if (spec.misfire != MisfirePolicy::skip && spec.misfire != MisfirePolicy::catchup &&
      spec.misfire != MisfirePolicy::compress) {
    throw InvalidSchedule(
        fmt::format("ScheduleSpec::misfire = {} is not a misfire policy: use skip, catchup or "
                    "compress",
                    static_cast<int>(spec.misfire)));
  }
  if (spec.catchup_limit < 0 || spec.catchup_limit > max_catchup_limit) {
    throw InvalidSchedule(fmt::format("ScheduleSpec::catchup_limit = {} is invalid: it must be between 0 and {}",
                                      spec.catchup_limit, max_catchup_limit));
  }
  if (spec.misfire_grace < Duration{0}) {
    throw InvalidSchedule(
        fmt::format("ScheduleSpec::misfire_grace = {}ms is invalid: it must be >= 0", spec.misfire_grace.count()));
  }
  return calendar;
}

// The row a create or update writes: the first fire is the first cron instant after now.
pg::ScheduleRow first_fire(detail::EngineCore& core, const std::string& id, const ScheduleSpec& spec,
                           const CronCalendar& calendar) {
  pg::ScheduleRow row;
  row.id = id;
  row.spec = spec;
  const auto next = calendar.next_after(detail::from_us(core.schedule_store().db_now_us()));
  row.next_fire_us = detail::to_us(next);
  row.prev_fire_us = detail::to_us(calendar.previous_before(next));
  return row;
}

// Validates, then writes the schedule with its first fire; false when `write` found no row to
// write (create: the id is taken; update: no such schedule).
bool save(detail::EngineCore& core, const std::string& id, const ScheduleSpec& spec,
          bool (pg::ScheduleStore::*write)(const pg::ScheduleRow&, const std::string&)) {
  const CronCalendar calendar = checked(core.registry(), id, spec);
  if (!(core.schedule_store().*write)(first_fire(core, id, spec, calendar), detail::random_uuid())) return false;
  core.signals().schedule_work.notify();
  return true;
}

ScheduleInfo info_of(pg::ScheduleRow row) {
  ScheduleInfo info;
  info.id = std::move(row.id);
  info.spec = std::move(row.spec);
  info.paused = row.paused;
  info.next_fire = detail::from_us(row.next_fire_us);
  info.fires_started = row.fires_started;
  info.fires_dropped = row.fires_dropped;
  return info;
}

}  // namespace

std::string to_string(MisfirePolicy policy) {
  switch (policy) {
    case MisfirePolicy::skip: return "skip";
    case MisfirePolicy::catchup: return "catchup";
    case MisfirePolicy::compress: return "compress";
  }
  return "unknown";
}

MisfirePolicy parse_misfire_policy(const std::string& text) {
  for (auto policy : {MisfirePolicy::skip, MisfirePolicy::catchup, MisfirePolicy::compress}) {
    if (text == to_string(policy)) return policy;
  }
  throw InvalidSchedule(fmt::format("misfire policy '{}' is unknown: use \"skip\", \"catchup\" or \"compress\"", text));
}

WorkflowId scheduled_workflow_id(const std::string& schedule_id, const std::string& time_zone,
                                 std::chrono::system_clock::time_point nominal) {
  // Formatting reads only the zone; the expression is any valid one.
  return schedule_id + ":" + CronCalendar(CronExpression::parse("@hourly"), time_zone).format(nominal);
}

void Schedules::create(const std::string& id, const ScheduleSpec& spec) {
  if (!save(core_, id, spec, &pg::ScheduleStore::create)) throw ScheduleAlreadyExists(id);
}

void Schedules::update(const std::string& id, const ScheduleSpec& spec) {
  if (!save(core_, id, spec, &pg::ScheduleStore::update)) throw ScheduleNotFound(id);
}

namespace {

void set_paused(detail::EngineCore& core, const std::string& id, bool paused, const OperatorAction* action) {
  check_id(id);
  if (action) detail::check_action(*action);
  if (!core.schedule_store().set_paused(id, paused, action)) throw ScheduleNotFound(id);
  if (!paused) core.signals().schedule_work.notify();
}

void remove_schedule(detail::EngineCore& core, const std::string& id, const OperatorAction* action) {
  check_id(id);
  if (action) detail::check_action(*action);
  if (!core.schedule_store().remove(id, action)) throw ScheduleNotFound(id);
}

}  // namespace

void Schedules::pause(const std::string& id) { set_paused(core_, id, true, nullptr); }
void Schedules::resume(const std::string& id) { set_paused(core_, id, false, nullptr); }
void Schedules::remove(const std::string& id) { remove_schedule(core_, id, nullptr); }
void Schedules::pause(const std::string& id, const OperatorAction& action) { set_paused(core_, id, true, &action); }
void Schedules::resume(const std::string& id, const OperatorAction& action) { set_paused(core_, id, false, &action); }
void Schedules::remove(const std::string& id, const OperatorAction& action) { remove_schedule(core_, id, &action); }

ScheduleInfo Schedules::get(const std::string& id) {
  check_id(id);
  auto rows = core_.schedule_store().read(id);
  if (rows.empty()) throw ScheduleNotFound(id);
  return info_of(std::move(rows.front()));
}

std::vector<ScheduleInfo> Schedules::list() {
  std::vector<ScheduleInfo> infos;
  for (auto& row : core_.schedule_store().read(std::nullopt)) infos.push_back(info_of(std::move(row)));
  return infos;
}

}  // namespace durable
