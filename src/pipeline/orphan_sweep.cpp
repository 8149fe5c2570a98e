#include "pipeline/orphan_sweep.hpp"

#include "base/log.hpp"

namespace durable::detail {

void OrphanSweep::loop() {
  while (!stopping_.load()) {
    auto seen = signals_.schedule_work.generation();
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
    const auto until = std::chrono::steady_clock::now() + every_;
    while (!stopping_.load() && std::chrono::steady_clock::now() < until) {
      signals_.schedule_work.wait_for(seen,
                                      std::chrono::duration_cast<Duration>(until - std::chrono::steady_clock::now()));
      seen = signals_.schedule_work.generation();
    }
  }
}

}  // namespace durable::detail
