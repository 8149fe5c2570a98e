#include "background/pause_watch.hpp"

#include "base/log.hpp"

namespace durable::detail {

void PauseWatch::read() {
  const pg::PausedNames names = store_.paused_names();
  if (paused_.set(names.workflows, names.activities)) {
    // A resume frees work whose own announcement this engine may have heard before the new copy.
    signals_.workflow_work.notify();
    signals_.task_work.notify();
    signals_.queue_work.notify();
  }
}

void PauseWatch::loop() {
  while (!stopping_.load()) {
    const auto seen = signals_.paused_types.generation();
    try {
      read();
    } catch (const std::exception& e) {
      logger().debug("reading the paused types (the last copy holds): {}", e.what());
    }
    signals_.paused_types.wait_for(seen, every_);
  }
}

}  // namespace durable::detail
