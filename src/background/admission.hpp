// Admission: an engine that serves named queues moves their queued runs into the queues' limits
// (pg::QueueStore::admit), as soon as a run is started or ends anywhere (the workflows and ended
// notifications ring `queue_work`) and every poll interval besides. Engines take turns per queue
// under its admission lock; what one admits, any engine serving the queue runs.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/paused_types.hpp"
#include "base/wake_signal.hpp"
#include "durable/options.hpp"
#include "pg/queue_store.hpp"

namespace durable::detail {

class Admission {
 public:
  // `queues`: the named queues this engine serves; `paused`: the workflows it runs, the only ones
  // it admits unless paused (an admitted run holds its place until a runner ends it);
  // `batch`: runs admitted per queue per turn at most.
  Admission(pg::QueueStore& store, std::vector<std::string> queues, const PausedTypes& paused, int batch,
            Duration poll_interval, EngineSignals& signals, const std::atomic<bool>& stopping)
      : store_(store),
        queues_(std::move(queues)),
        paused_(paused),
        batch_(batch),
        poll_interval_(poll_interval),
        signals_(signals),
        stopping_(stopping) {}
  void loop();  // until `stopping`

 private:
  // Admits what the queue's limits allow now; returns when a full rate window frees a place.
  std::optional<Duration> admit(const std::string& queue);
  pg::QueueStore& store_;
  const std::vector<std::string> queues_;
  const PausedTypes& paused_;
  const int batch_;
  const Duration poll_interval_;
  EngineSignals& signals_;
  const std::atomic<bool>& stopping_;
  std::map<std::string, std::chrono::steady_clock::time_point> last_sweeps_;  // per queue, of its empty lines
};

}  // namespace durable::detail
