// The scheduler every started engine runs: fires due schedules, then sleeps until the next one
// is due by the database clock (or a schedule changes).
#pragma once

#include <atomic>

#include "base/wake_signal.hpp"
#include "durable/options.hpp"
#include "pg/schedule_store.hpp"

namespace durable::detail {

class Scheduler {
 public:
  // Fires through `store`; wakes the runners when it started runs; sleeps on the schedule signal.
  Scheduler(pg::ScheduleStore& store, Duration poll_interval, EngineSignals& signals, const std::atomic<bool>& stopping)
      : store_(store), poll_interval_(poll_interval), signals_(signals), stopping_(stopping) {}
  void loop();  // until `stopping`

 private:
  // Fires what is due; returns when nothing more is.
  void fire_due();
  pg::ScheduleAdvance plan(const pg::ScheduleRow& row, std::int64_t now_us) const;
  pg::ScheduleStore& store_;
  const Duration poll_interval_;
  EngineSignals& signals_;
  const std::atomic<bool>& stopping_;
};

}  // namespace durable::detail
