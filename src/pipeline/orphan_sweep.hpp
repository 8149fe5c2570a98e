// The fallback for children whose parent ended: the engine that commits a parent's end cancels
// its children under the cancel policy at once, but it may die before, or a child may be locked
// by its own commit just then. Every engine that runs workflows sweeps for such orphans now and
// then and cancels them (and so, pass by pass, their own children).
#pragma once

#include <atomic>

#include "base/wake_signal.hpp"
#include "durable/options.hpp"
#include "pg/store.hpp"

namespace durable::detail {

class OrphanSweep {
 public:
  // Sweeps through `store` every `every`; sleeps on the schedule signal, which stop() rings.
  OrphanSweep(pg::Store& store, Duration every, EngineSignals& signals, const std::atomic<bool>& stopping)
      : store_(store), every_(every), signals_(signals), stopping_(stopping) {}
  void loop();  // until `stopping`

 private:
  pg::Store& store_;
  const Duration every_;
  EngineSignals& signals_;
  const std::atomic<bool>& stopping_;
};

}  // namespace durable::detail
