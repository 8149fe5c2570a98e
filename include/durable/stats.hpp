// Stats: what the database shows of a schema's work right now, across every engine on it: runs by
// status, blocked runs, the queues and the engines with their load (Runs::stats; `durable stats`).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "durable/queue_records.hpp"
#include "durable/run_records.hpp"
#include "durable/status.hpp"

namespace durable {

// Activity tasks of one activity name that are not finished.
struct ActivityQueueStats {
  std::string activity;
  std::int64_t ready = 0;           // claimable now: due, or their attempt's lease ran out
  std::int64_t delayed = 0;         // waiting for a retry's backoff (or a timer) to pass
  std::int64_t running = 0;         // leased to an engine now
  double oldest_ready_seconds = 0;  // how long the oldest ready one has waited (0: none)
};

// Workflow runs of one workflow name waiting for a replay that any engine could claim now.
struct WorkflowQueueStats {
  std::string workflow;
  std::int64_t waiting = 0;
  double oldest_waiting_seconds = 0;
};

// A started engine, as its row in the schema and the leases it holds show it. An engine of a build
// older than the engines table shows only as the owner of its leases.
struct InstanceStats {
  std::string owner;     // `instance@host:pid`, as leases name it
  std::string instance;  // EngineOptions::instance ("" when only its leases show it)
  std::string app_version;
  int activity_capacity = 0;           // its activity slots (0: it runs no activities)
  int workflow_capacity = 0;           // its runners (0: it runs no workflows)
  std::int64_t activities_leased = 0;  // activity tasks leased to it now
  // activities_leased / activity_capacity. A task stays leased until its outcome is committed,
  // which may be just after its body left its slot: this can pass 1 for a moment.
  std::optional<double> saturation{};
  std::optional<TimePoint> started_at{}, seen_at{};
  bool alive = false;  // it renewed its row in time (every 5 poll intervals); false: stopped saying so
};

struct Stats {
  TimePoint at{};  // the database's time of the reading
  std::map<WorkflowStatus, std::int64_t> runs_by_status;
  std::int64_t blocked = 0;                         // running runs blocked by a non-determinism error
  std::optional<RunSummary> oldest_running;         // the running run created first
  std::vector<ActivityQueueStats> activity_queues;  // by activity name
  std::vector<WorkflowQueueStats> workflow_queues;  // by workflow name; names with none waiting are left out
  std::vector<QueueInfo> queues;                    // the named queues (durable/queues.hpp), by name
  std::vector<InstanceStats> instances;             // by owner
};

}  // namespace durable
