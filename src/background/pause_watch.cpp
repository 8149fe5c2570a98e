#include "background/pause_watch.hpp"

#include "base/log.hpp"

namespace durable::detail {

void PauseWatch::read() {
  std::optional<bool> changed;
  // A pause or resume this engine made while the query ran may be newer than what it read.
  for (int tries = 0; tries < 3 && !changed; ++tries) {
    const std::uint64_t before = paused_.own_changes();
    const pg::PausedNames names = store_.paused_names();
    changed = paused_.set(names.workflows, names.activities, before);
  }
  if (changed.value_or(false)) {
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
