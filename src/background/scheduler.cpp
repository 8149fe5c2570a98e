#include "background/scheduler.hpp"

#include <algorithm>

#include "base/log.hpp"
#include "base/uuid.hpp"
#include "schedule/fire_plan.hpp"

namespace durable::detail {

namespace {
constexpr int schedules_per_transaction = 16;
}

pg::ScheduleAdvance Scheduler::plan(const pg::ScheduleRow& row, std::int64_t now_us) const {
  const ScheduleSpec& spec = row.spec;
  const CronCalendar calendar(CronExpression::parse(spec.cron), spec.time_zone);
  const FirePlan fires = plan_fires(calendar, spec.misfire, spec.catchup_limit, spec.misfire_grace,
                                    from_us(row.next_fire_us), from_us(row.prev_fire_us), from_us(now_us));
  pg::ScheduleAdvance advance;
  advance.next_fire_us = to_us(fires.next_fire);
  advance.prev_fire_us = to_us(fires.prev_fire);
  advance.dropped = fires.dropped;
  for (const PlannedFire& fire : fires.starts) {
    Json context = {{"id", row.id},
                    {"nominal_us", to_us(fire.nominal)},
                    {"window_start_us", to_us(fire.window_start)},
                    {"fires", fire.fires}};
    advance.starts.push_back({scheduled_workflow_id(row.id, spec.time_zone, fire.nominal).str(), time_ordered_uuid(),
                              Json{{"schedule", std::move(context)}}});
  }
  if (fires.dropped > 0) {
    logger().warn("schedule '{}' missed {} fire(s) before {} ({} policy): dropped", row.id, fires.dropped,
                  calendar.format(fires.next_fire), to_string(spec.misfire));
  }
  return advance;
}

void Scheduler::fire_due() {
  for (;;) {
    auto fired = store_.fire_due(schedules_per_transaction,
                                 [this](const pg::ScheduleRow& row, std::int64_t now_us) { return plan(row, now_us); });
    if (fired.runs_started > 0) {
      logger().info("scheduler started {} run(s) for {} schedule(s)", fired.runs_started, fired.schedules);
      signals_.workflow_work.notify_one();
    }
    if (fired.schedules < schedules_per_transaction) return;
  }
}

void Scheduler::loop() {
  const Duration poll = poll_interval_;
  while (!stopping_.load()) {
    const auto seen = signals_.schedule_work.generation();
    Duration wait = poll;
    try {
      fire_due();
      // Overdue yet not fired means another engine holds it or it cannot fire: check again at the poll.
      if (auto in_us = store_.next_due_in_us(); in_us && *in_us > 0) {
        wait = std::min(poll, std::chrono::ceil<Duration>(std::chrono::microseconds{*in_us}));
      }
    } catch (const std::exception& e) {
      logger().warn("scheduler: {}", e.what());
    }
    signals_.schedule_work.wait_for(seen, wait);
  }
}

}  // namespace durable::detail
