// Keeps the engine's copy of the paused types (base/paused_types.hpp) fresh: read as the engine
// starts, again whenever a pause or resume is announced (NOTIFY), and every poll interval in case
// an announcement was lost while the listener reconnected. When a type comes back, the claim
// loops are woken, so what waited for it is claimed at once.
#pragma once

#include <atomic>

#include "base/paused_types.hpp"
#include "base/wake_signal.hpp"
#include "durable/options.hpp"
#include "pg/queue_store.hpp"

namespace durable::detail {

class PauseWatch {
 public:
  PauseWatch(pg::QueueStore& store, PausedTypes& paused, Duration every, EngineSignals& signals,
             const std::atomic<bool>& stopping)
      : store_(store), paused_(paused), every_(every), signals_(signals), stopping_(stopping) {}
  void read();  // once; throws when the database cannot be read (start() fails then)
  void loop();  // until `stopping`; a failed read only logs, and the copy stays as it was

 private:
  pg::QueueStore& store_;
  PausedTypes& paused_;
  const Duration every_;
  EngineSignals& signals_;
  const std::atomic<bool>& stopping_;
};

}  // namespace durable::detail
