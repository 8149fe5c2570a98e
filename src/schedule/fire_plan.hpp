// Which runs a due schedule starts, by its misfire policy: pure arithmetic on fire times,
// tested without a database.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "durable/cron.hpp"
#include "durable/schedule.hpp"

namespace durable::detail {

using TimePoint = std::chrono::system_clock::time_point;

// The database speaks microseconds since the epoch.
inline TimePoint from_us(std::int64_t us) {
  return TimePoint{std::chrono::duration_cast<TimePoint::duration>(std::chrono::microseconds{us})};
}
inline std::int64_t to_us(TimePoint t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
}

struct PlannedFire {
  TimePoint nominal;       // the run's nominal time (the last fire it stands for)
  TimePoint window_start;  // the nominal time before the first fire it stands for
  std::int64_t fires = 1;
};

struct FirePlan {
  std::vector<PlannedFire> starts;  // oldest first
  std::int64_t dropped = 0;         // missed fires that start nothing
  TimePoint next_fire;              // the schedule's next nominal time not handled
  TimePoint prev_fire;              // the cron time before next_fire
};

// The fires due at `now`: nominal times from `next_fire` up to `now`. One is missed when `now`
// is more than `grace` past it. At most `max_fires` are handled per call; the rest stay due.
FirePlan plan_fires(const CronCalendar& calendar, MisfirePolicy policy, int catchup_limit, Duration grace,
                    TimePoint next_fire, TimePoint prev_fire, TimePoint now, std::size_t max_fires = 1'000'000);

}  // namespace durable::detail
