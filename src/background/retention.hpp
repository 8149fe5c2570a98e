// Periodic retention (EngineOptions::retention): every started engine with it on prunes the runs
// that ended longer ago than the retention, one engine at a time (an advisory lock per batch).
#pragma once

#include <atomic>
#include <string>

#include "base/wake_signal.hpp"
#include "durable/options.hpp"
#include "pg/run_store.hpp"

namespace durable::detail {

class Retention {
 public:
  // Prunes through `store` as `owner` (the audit trail's actor); sleeps on the schedule signal,
  // which stop() rings.
  Retention(pg::RunStore& store, Duration retention, std::string owner, EngineSignals& signals,
            const std::atomic<bool>& stopping)
      : store_(store), retention_(retention), owner_(std::move(owner)), signals_(signals), stopping_(stopping) {}
  void loop();  // until `stopping`

 private:
  pg::RunStore& store_;
  const Duration retention_;
  const std::string owner_;
  EngineSignals& signals_;
  const std::atomic<bool>& stopping_;
};

}  // namespace durable::detail
