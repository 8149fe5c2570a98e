#include "pipeline/sweeps.hpp"

#include "base/log.hpp"

namespace durable::detail {

void Sweeps::cancel_orphans() {
  try {
    // A pass cancels up to 1000; their own children are orphans in the next pass.
    for (int pass = 0; pass < 100 && !stopping_.load(); ++pass) {
      const auto cancelled = store_.cancel_orphans();
      if (cancelled.empty()) break;
      logger().info("cancelled {} child run(s) whose parent had ended", cancelled.size());
    }
  } catch (const std::exception& e) {
    logger().warn("sweeping for orphaned children: {}", e.what());
  }
}

void Sweeps::wake_blocked() {
  try {
    if (const int woken = store_.wake_blocked(names_json_); woken > 0) {
      logger().info("taking on {} blocked run(s) that no engine of this app version tried yet", woken);
      signals_.workflow_work.notify_one();  // this engine's runners first: they pass the wake-up on
    }
  } catch (const std::exception& e) {
    logger().warn("sweeping for blocked runs: {}", e.what());
  }
}

void Sweeps::loop() {
  while (!stopping_.load()) {
    auto seen = signals_.schedule_work.generation();
    wake_blocked();
    cancel_orphans();
    const auto until = std::chrono::steady_clock::now() + every_;
    while (!stopping_.load() && std::chrono::steady_clock::now() < until) {
      signals_.schedule_work.wait_for(seen,
                                      std::chrono::duration_cast<Duration>(until - std::chrono::steady_clock::now()));
      seen = signals_.schedule_work.generation();
    }
  }
}

}  // namespace durable::detail
