// The metrics interface: what one engine instance reports about its dispatcher, runners and queue.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace durable {

// A latency distribution in seconds, with fixed bucket bounds (Prometheus-style).
struct Histogram {
  std::vector<double> bounds{};          // upper bounds in seconds, ascending
  std::vector<std::uint64_t> buckets{};  // buckets[i]: observations in (bounds[i-1], bounds[i]]; one more for +Inf
  std::uint64_t count = 0;               // all observations
  double sum = 0;                        // their total, in seconds

  // The smallest bound that at least `q` (clamped to 0..1) of the observations fall under;
  // nullopt when empty, +infinity when it is past the last bound.
  std::optional<double> quantile_bound(double q) const;
};

// A named queue an instance serves (durable/queues.hpp), read from the database with its snapshot.
struct QueueGauges {
  std::string queue{};
  std::int64_t queued = 0, running = 0, throttled = 0;
  double oldest_queued_seconds = 0;
  bool paused = false;
  std::int64_t activities_waiting = 0, activities_running = 0;
};

// A snapshot of one engine instance. Counters count since the Engine object was made.
struct EngineMetrics {
  std::string instance{};  // EngineOptions::instance
  std::string schema{};    // EngineOptions::schema

  // The activity pool, now.
  int activity_capacity = 0;   // activity slots of this instance (its activity concurrency)
  int activity_busy = 0;       // slots with a body running, stuck ones included
  int stuck_slots = 0;         // bodies still running after their attempt timed out: their slots stay taken
  int activity_in_flight = 0;  // tasks leased here whose outcome is not committed yet (at most twice the slots)
  double saturation = 0;       // activity_busy / activity_capacity

  // The queues, read from the database when the snapshot is taken: the age of the oldest task
  // this instance could claim now, and of the oldest workflow waiting for a replay that its
  // runners could claim now (0 when none is waiting). Empty when the read failed.
  std::optional<double> queue_age_seconds{};
  std::optional<double> workflow_queue_age_seconds{};
  // Running runs of this instance's workflows that are blocked by a non-determinism error
  // (EngineOptions::on_nondeterminism), read from the database. Empty when the read failed.
  std::optional<std::int64_t> workflows_blocked{};
  // The named queues it serves, by name (labelled `queue`: a bounded set, never per key or run).
  // Empty when it serves none or the read failed.
  std::vector<QueueGauges> queues{};

  // Activity tasks.
  std::uint64_t claims = 0;           // tasks this instance took to run (claimed or run at once)
  std::uint64_t rejected_claims = 0;  // polls and wake-ups that found every slot busy and claimed nothing
  std::uint64_t completions = 0;      // tasks completed (results committed, reused results included)
  std::uint64_t retries = 0;          // failed attempts given another attempt
  std::uint64_t failures = 0;         // tasks failed for good (attempts or horizon ran out, or not retryable)
  std::uint64_t timeouts = 0;         // attempts this instance failed for running past their timeout
  std::uint64_t lease_expiries = 0;   // tasks this instance took over after another attempt's lease ran out
  std::uint64_t idempotency_input_mismatches = 0;  // results reused for a key given another input
  std::uint64_t run_at_once = 0;                   // tasks started by the engine that scheduled them, without a claim
  std::uint64_t outcome_commits = 0;               // statements that committed finished tasks' outcomes, in groups

  // Workflow replays.
  std::uint64_t replays = 0;  // replays committed (workflow code run against its journal)
  std::uint64_t workflows_completed = 0;
  std::uint64_t workflows_failed = 0;

  Histogram
      claim_latency{};  // one claim round trip that took work (activity tasks or workflows); empty polls are left out
  Histogram replay_latency{};  // one replay: read the journal's tail, run the code, commit
};

// The Prometheus text exposition (format 0.0.4) of one or more instances' snapshots, each
// series labelled `schema` and `engine_instance` (Prometheus keeps `instance` for the scraped
// target). Metric names are listed in docs/operations.md. Serve it as `text/plain; version=0.0.4`.
std::string prometheus_text(const std::vector<EngineMetrics>& instances);

}  // namespace durable
