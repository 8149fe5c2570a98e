#include "background/sweeps.hpp"

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
  repeat_until_stopped(signals_.schedule_work, every_, stopping_, [&] {
    wake_blocked();
    cancel_orphans();
  });
}

}  // namespace durable::detail
