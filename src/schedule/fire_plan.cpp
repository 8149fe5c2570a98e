#include "schedule/fire_plan.hpp"

#include <algorithm>

namespace durable::detail {

FirePlan plan_fires(const CronCalendar& calendar, MisfirePolicy policy, int catchup_limit, Duration grace,
                    TimePoint next_fire, TimePoint prev_fire, TimePoint now, std::size_t max_fires) {
  FirePlan plan;
  std::vector<PlannedFire> due;  // each with the window back to the cron time before it
  TimePoint window_start = prev_fire;
  TimePoint t = next_fire;
  while (t <= now && due.size() < max_fires) {
    due.push_back({t, window_start, 1});
    window_start = t;
    t = calendar.next_after(t);
  }
  plan.next_fire = t;
  plan.prev_fire = window_start;

  // Older fires come first, so the missed ones are a prefix.
  const auto on_time =
      std::find_if(due.begin(), due.end(), [&](const PlannedFire& f) { return now - f.nominal <= grace; });
  const auto missed = static_cast<std::int64_t>(on_time - due.begin());
  if (missed > 0) {
    switch (policy) {
      case MisfirePolicy::skip: plan.dropped = missed; break;
      case MisfirePolicy::catchup: {
        const std::int64_t kept = std::min<std::int64_t>(missed, catchup_limit);
        plan.dropped = missed - kept;
        plan.starts.assign(on_time - kept, on_time);
        break;
      }
      case MisfirePolicy::compress:
        plan.starts.push_back({std::prev(on_time)->nominal, due.front().window_start, missed});
        break;
    }
  }
  plan.starts.insert(plan.starts.end(), on_time, due.end());
  return plan;
}

}  // namespace durable::detail
