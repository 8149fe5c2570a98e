// The shared state behind an Engine and its handles: options, registry, database access,
// signals, and the threads that run workflows and activities.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "durable/engine.hpp"
#include "dispatch/step_committer.hpp"
#include "pg/connection_pool.hpp"
#include "pg/schedule_store.hpp"
#include "pg/store.hpp"
#include "registry.hpp"
#include "telemetry/recorder.hpp"
#include "wake_signal.hpp"

namespace durable::detail {

class Dispatcher;
class Runner;
class Scheduler;

class EngineCore {
 public:
  explicit EngineCore(EngineOptions options);
  ~EngineCore();

  void start();
  void stop();
  // Starts the one LISTEN session, once: at start(), or at a thin client's (never started) first
  // wait for a result, so it hears of runs ended elsewhere as soon as an engine does.
  void listen_once();
  // Migrates the schema now (start() does; any other database call does on its first connection).
  void ensure_schema();
  // Lease owner name: "<instance>@<host>:<pid>".
  const std::string& owner() const { return owner_; }
  bool stopping() const { return stopping_.load(); }
  bool started() const { return started_.load(); }  // start() was called (even if it failed or stopped since)
  // Activity slots of this instance: its entry in instance_activity_concurrency, or the default.
  int activity_capacity() const;
  EngineMetrics snapshot();
  // Set before any engine thread starts and reset after they all stopped; null when this engine
  // runs no workflows.
  Runner* runner() const { return runner_.get(); }
  // The runner while the engine runs (null before start() and once stop() began), for any thread.
  Runner* local_runner() const { return local_runner_.load(); }
  MetricsRecorder metrics;

  EngineOptions options;
  Registry registry;
  pg::ConnectionPool pool;
  pg::Store store;
  pg::ScheduleStore schedule_store;
  // Every finished activity commits through it, in groups.
  StepCommitter steps{[this](const std::vector<const pg::StepCommit*>& batch) {
    auto outcomes = store.complete_steps(batch, owner_, options.lease_margin);
    ++metrics.outcome_commits;
    return outcomes;
  }};
  // Each wakes only the loops it concerns, from a NOTIFY or a local write.
  WakeSignal workflow_work;  // a workflow may be runnable: wakes a runner (notify_one), which passes it on
  WakeSignal task_work;      // a task may be claimable, or a pool slot freed: wakes the dispatcher
  WakeSignal ended;          // a workflow run ended: wakes result() waiters
  WakeSignal schedule_work;  // a schedule changed or the clock moved: wakes the scheduler

 private:
  void listen();

  std::string owner_;
  std::atomic<bool> started_{false};
  std::atomic<bool> stopping_{false};
  mutable std::mutex lifecycle_mutex_;  // guards dispatcher_ against a snapshot during stop()
  std::unique_ptr<Dispatcher> dispatcher_;
  std::unique_ptr<Runner> runner_;
  std::atomic<Runner*> local_runner_{nullptr};
  std::unique_ptr<Scheduler> scheduler_;
  std::vector<std::thread> threads_;
  std::once_flag listener_once_;
  std::thread listener_;
};

}  // namespace durable::detail
