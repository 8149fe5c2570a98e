#include "pipeline/recorder.hpp"

#include <algorithm>

namespace durable::detail {

namespace {
// From half a millisecond (a claim on an idle local database) to ten seconds (something is wrong).
const std::vector<double> latency_bounds = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                            0.1,    0.25,  0.5,    1,     2.5,  5,     10};
}  // namespace

LatencyRecorder::LatencyRecorder() {
  histogram_.bounds = latency_bounds;
  histogram_.buckets.assign(latency_bounds.size() + 1, 0);
}

void LatencyRecorder::observe(std::chrono::steady_clock::duration elapsed) {
  const double seconds = std::chrono::duration<double>(elapsed).count();
  const auto bucket = static_cast<std::size_t>(
      std::lower_bound(histogram_.bounds.begin(), histogram_.bounds.end(), seconds) - histogram_.bounds.begin());
  std::lock_guard lock(mutex_);
  ++histogram_.buckets[bucket];
  ++histogram_.count;
  histogram_.sum += seconds;
}

Histogram LatencyRecorder::snapshot() const {
  std::lock_guard lock(mutex_);
  return histogram_;
}

void MetricsRecorder::fill(EngineMetrics& out) const {
  out.claims = claims.load();
  out.rejected_claims = rejected_claims.load();
  out.completions = completions.load();
  out.retries = retries.load();
  out.failures = failures.load();
  out.timeouts = timeouts.load();
  out.lease_expiries = lease_expiries.load();
  out.idempotency_input_mismatches = idempotency_input_mismatches.load();
  out.run_at_once = run_at_once.load();
  out.outcome_commits = outcome_commits.load();
  out.replays = replays.load();
  out.workflows_completed = workflows_completed.load();
  out.workflows_failed = workflows_failed.load();
  out.claim_latency = claim_latency.snapshot();
  out.replay_latency = replay_latency.snapshot();
}

}  // namespace durable::detail
