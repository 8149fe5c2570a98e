// What every engine that runs workflows does now and then, as a fallback for what a crash or a
// deploy left behind:
// - children whose parent ended: the engine that commits a parent's end cancels its children
//   under the cancel policy at once, but it may die before, or a child may be locked by its own
//   commit just then. The sweep cancels such orphans (and so, pass by pass, their own children).
// - runs blocked by a non-determinism error that no engine of this app version tried since they
//   last made progress: made due now, so new code (or old code brought back) takes them on at
//   once rather than at their next retry. The first pass runs as the engine starts.
#pragma once

#include <atomic>
#include <string>

#include "base/wake_signal.hpp"
#include "durable/options.hpp"
#include "pg/store.hpp"

namespace durable::detail {

class Sweeps {
 public:
  // Sweeps through `store` every `every`, for runs of the workflow names `names_json` (json
  // array); sleeps on the schedule signal, which stop() rings.
  Sweeps(pg::Store& store, std::string names_json, Duration every, EngineSignals& signals,
         const std::atomic<bool>& stopping)
      : store_(store), names_json_(std::move(names_json)), every_(every), signals_(signals), stopping_(stopping) {}
  void loop();  // until `stopping`

 private:
  void cancel_orphans();
  void wake_blocked();
  pg::Store& store_;
  const std::string names_json_;
  const Duration every_;
  EngineSignals& signals_;
  const std::atomic<bool>& stopping_;
};

}  // namespace durable::detail
