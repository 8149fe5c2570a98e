#include "background/presence.hpp"

#include "base/log.hpp"

namespace durable::detail {

void Presence::renew(bool starting) {
  try {
    store_.engine_alive(row_.owner, row_.instance, row_.activity_capacity, row_.workflow_capacity, 3 * every_,
                        starting);
  } catch (const std::exception& e) {
    logger().debug("renewing this engine's row in the list of engines: {}", e.what());
  }
}

void Presence::loop() {
  bool starting = true;
  repeat_until_stopped(signals_.schedule_work, every_, stopping_, [&] {
    renew(starting);
    starting = false;
  });
}

void Presence::removed() {
  try {
    store_.engine_stopped(row_.owner);
  } catch (const std::exception& e) {
    logger().debug("removing this engine's row from the list of engines (it expires instead): {}", e.what());
  }
}

}  // namespace durable::detail
