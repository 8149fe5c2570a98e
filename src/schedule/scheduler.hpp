// The scheduler every started engine runs: fires due schedules, then sleeps until the next one
// is due by the database clock (or a schedule changes).
#pragma once

#include "pg/schedule_store.hpp"

namespace durable::detail {

class EngineCore;

class Scheduler {
 public:
  explicit Scheduler(EngineCore& core) : core_(core) {}
  void loop();

 private:
  // Fires what is due; returns when nothing more is.
  void fire_due();
  pg::ScheduleAdvance plan(const pg::ScheduleRow& row, std::int64_t now_us) const;
  EngineCore& core_;
};

}  // namespace durable::detail
