// What the engine knows about one running activity attempt, shared with its ActivityContext.
#pragma once

#include <atomic>
#include <chrono>
#include <string>

namespace durable::detail {

struct AttemptState {
  std::string workflow_id;
  std::string activity_name;
  int step = 0;
  int attempt = 0;
  std::chrono::steady_clock::time_point deadline;
  std::atomic<bool> cancelled{false};
};

}  // namespace durable::detail
