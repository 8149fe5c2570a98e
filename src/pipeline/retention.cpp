#include "pipeline/retention.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "base/log.hpp"

namespace durable::detail {

void Retention::loop() {
  // A tenth of the retention between rounds (so a run outlives it by at most a tenth), within
  // one second and one hour.
  const Duration every = std::clamp<Duration>(retention_ / 10, std::chrono::seconds{1}, std::chrono::hours{1});
  const OperatorAction action{owner_,
                              fmt::format("retention: runs that ended more than {} ms ago", retention_.count())};
  repeat_until_stopped(signals_.schedule_work, every, stopping_, [&] {
    try {
      const auto cutoff = std::chrono::system_clock::now() - retention_;
      const PruneOutcome pruned =
          store_.prune(std::chrono::duration_cast<std::chrono::microseconds>(cutoff.time_since_epoch()).count(), action,
                       false, true);
      if (pruned.runs > 0) logger().info("retention pruned {} run(s) in {} batch(es)", pruned.runs, pruned.batches);
    } catch (const std::exception& e) {
      logger().warn("retention: {}", e.what());
    }
  });
}

}  // namespace durable::detail
