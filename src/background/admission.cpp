#include "background/admission.hpp"

#include "base/log.hpp"

namespace durable::detail {

void Admission::admit(const std::string& queue) {
  try {
    // A full batch may leave more to admit: go on until a turn admits less.
    for (int turn = 0; turn < 100 && !stopping_.load(); ++turn) {
      const auto done = store_.admit(queue, names_json_, batch_);
      if (done.cancelled > 0) {
        logger().info("queue '{}': {} queued run(s) asked to cancel ended before they ran", queue, done.cancelled);
        signals_.run_ended();
      }
      if (done.admitted > 0) {
        logger().debug("queue '{}': admitted {} run(s)", queue, done.admitted);
        signals_.workflow_work.notify_one();  // this engine's runners first: they pass the wake-up on
      }
      if (done.admitted < batch_ && done.cancelled < batch_) break;
    }
  } catch (const std::exception& e) {
    logger().warn("admitting the queued runs of queue '{}' failed (tried again soon): {}", queue, e.what());
  }
}

void Admission::loop() {
  // At once on every ring (a run started or ended, a queue resumed), else every poll interval.
  while (!stopping_.load()) {
    const auto seen = signals_.queue_work.generation();
    for (const auto& queue : queues_) admit(queue);
    signals_.queue_work.wait_for(seen, poll_interval_);
  }
}

}  // namespace durable::detail
