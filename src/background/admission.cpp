#include "background/admission.hpp"

#include <algorithm>

#include "base/log.hpp"

namespace durable::detail {

std::optional<Duration> Admission::admit(const std::string& queue) {
  std::optional<Duration> retry_in;
  try {
    // A full batch may leave more to admit: go on until a turn admits less.
    for (int turn = 0; turn < 100 && !stopping_.load(); ++turn) {
      // A sweep of the queue's empty lines at most once a poll interval: it reads every line.
      const auto now = std::chrono::steady_clock::now();
      auto& last_sweep = last_sweeps_[queue];
      const bool sweep = now - last_sweep >= poll_interval_;
      const auto done = store_.admit(queue, *paused_.workflow_names_json(), batch_, sweep);
      if (sweep && done.short_of_lines) last_sweep = now;
      if (done.cancelled > 0) {
        logger().info("queue '{}': {} queued run(s) asked to cancel ended before they ran", queue, done.cancelled);
        signals_.run_ended();
      }
      if (done.admitted > 0) {
        logger().debug("queue '{}': admitted {} run(s)", queue, done.admitted);
        signals_.workflow_work.notify_one();  // this engine's runners first: they pass the wake-up on
      }
      retry_in = done.retry_in;
      if (done.admitted < batch_ && done.cancelled < batch_) break;
    }
  } catch (const std::exception& e) {
    logger().warn("admitting the queued runs of queue '{}' failed (tried again soon): {}", queue, e.what());
  }
  return retry_in;
}

void Admission::loop() {
  // At once on every ring (a run started or ended, a queue resumed), as a full rate window frees
  // a place, else every poll interval.
  while (!stopping_.load()) {
    const auto seen = signals_.queue_work.generation();
    Duration wait = poll_interval_;
    for (const auto& queue : queues_) {
      if (auto retry_in = admit(queue)) wait = std::min(wait, *retry_in);
    }
    signals_.queue_work.wait_for(seen, wait);
  }
}

}  // namespace durable::detail
