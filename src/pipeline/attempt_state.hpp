// What the engine knows about one running activity attempt, shared with its ActivityContext.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <string>

#include "durable/detail/payload.hpp"
#include "durable/ids.hpp"

namespace durable::detail {

struct AttemptState {
  using Clock = std::chrono::steady_clock;

  WorkflowId workflow_id;
  std::string activity_name;
  int step = 0;
  int attempt = 0;
  Json last_heartbeat;
  std::atomic<Clock::rep> deadline{0};  // Clock ticks; moved by heartbeats, read by the watchdog
  std::atomic<bool> cancelled{false};
  std::atomic<bool> timed_out{false};  // the watchdog failed this attempt; its outcome is discarded
  std::function<bool(const Json&)> heartbeat;

  Clock::time_point deadline_point() const { return Clock::time_point{Clock::duration{deadline.load()}}; }
  void set_deadline(Clock::time_point t) { deadline = t.time_since_epoch().count(); }
};

}  // namespace durable::detail
