// What the stages a step goes through (the dispatcher's and the runner's) work with, each named:
// the engine's options and lease owner, the definitions, the store, the group commit, the
// counters, the signals and the stop flag. The engine makes it once and hands each stage a copy.
#pragma once

#include <atomic>
#include <string>

#include "base/registry.hpp"
#include "base/wake_signal.hpp"
#include "durable/engine.hpp"
#include "pg/activity_transaction.hpp"
#include "pg/store.hpp"
#include "pipeline/recorder.hpp"
#include "pipeline/step_committer.hpp"

namespace durable::detail {

struct StageParts {
  const EngineOptions& options;
  std::string owner;  // takes the leases: "<instance>@<host>:<pid>"
  const Registry& registry;
  pg::Store& store;
  pg::TransactionConnections& transactions;  // the sessions transactional activities run on
  StepCommitter& steps;  // every finished task commits through it, in groups, but a transactional one
  MetricsRecorder& metrics;
  EngineSignals& signals;
  const std::atomic<bool>& stopping;
};

}  // namespace durable::detail
