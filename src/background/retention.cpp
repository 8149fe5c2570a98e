#include "background/retention.hpp"

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
      // Judged by the database clock, as ended_at is written and time skipping moves it.
      const std::int64_t cutoff_us =
          store_.db_now_us() - std::chrono::duration_cast<std::chrono::microseconds>(retention_).count();
      const PruneOutcome pruned = store_.prune(cutoff_us, action, false, true);
      if (pruned.runs > 0) logger().info("retention pruned {} run(s) in {} batch(es)", pruned.runs, pruned.batches);
    } catch (const std::exception& e) {
      logger().warn("retention: {}", e.what());
    }
  });
}

}  // namespace durable::detail
