// An engine's row in the schema's list of engines (the operator's view: Runs::stats), with its
// capacities: written as it starts, renewed every few poll intervals, removed as it stops. An
// engine that died stops renewing it, and the row says so once it expires.
#pragma once

#include <atomic>
#include <string>

#include "base/wake_signal.hpp"
#include "durable/options.hpp"
#include "pg/store.hpp"

namespace durable::detail {

struct PresenceRow {
  std::string owner, instance;
  int activity_capacity = 0, workflow_capacity = 0;
};

class Presence {
 public:
  // Renews the row through `store` every `every`, each time for three times that long (two missed
  // renewals are not yet a death); sleeps on the schedule signal, which stop() rings.
  Presence(pg::Store& store, PresenceRow row, Duration every, EngineSignals& signals, const std::atomic<bool>& stopping)
      : store_(store), row_(std::move(row)), every_(every), signals_(signals), stopping_(stopping) {}
  void loop();     // writes the row at once, then renews it until `stopping`
  void removed();  // as the engine stops: its row goes (a failure only logs: the row expires)

 private:
  void renew(bool starting);
  pg::Store& store_;
  const PresenceRow row_;
  const Duration every_;
  EngineSignals& signals_;
  const std::atomic<bool>& stopping_;
};

}  // namespace durable::detail
