// Where an engine's threads count what they do; Engine::metrics() reads it into EngineMetrics.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>

#include "durable/metrics.hpp"

namespace durable::detail {

// A histogram that many threads observe into.
class LatencyRecorder {
 public:
  LatencyRecorder();
  void observe(std::chrono::steady_clock::duration elapsed);
  Histogram snapshot() const;

 private:
  mutable std::mutex mutex_;
  Histogram histogram_;
};

struct MetricsRecorder {
  using Counter = std::atomic<std::uint64_t>;
  Counter claims{0}, rejected_claims{0}, completions{0}, retries{0}, failures{0}, timeouts{0}, lease_expiries{0},
      idempotency_input_mismatches{0}, run_at_once{0}, outcome_commits{0}, replays{0}, workflows_completed{0},
      workflows_failed{0};
  LatencyRecorder claim_latency, replay_latency;

  // Copies the counters and histograms into `out` (the gauges are filled by their owners).
  void fill(EngineMetrics& out) const;
};

}  // namespace durable::detail
