// The shared state behind an Engine and its handles: options, registry, database access,
// signals, and the threads that run workflows and activities. It builds the pipeline's
// components at start(), handing each exactly the collaborators it uses.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/checks.hpp"
#include "base/paused_types.hpp"
#include "base/registry.hpp"
#include "base/wake_signal.hpp"
#include "durable/engine.hpp"
#include "pg/database.hpp"
#include "pipeline/journal_caches.hpp"
#include "pipeline/recorder.hpp"
#include "pipeline/replayer.hpp"
#include "pipeline/step_committer.hpp"
#include "pipeline/step_finisher.hpp"

namespace durable::detail {

class Dispatcher;
class Runner;
class Scheduler;
class Retention;
class Sweeps;
class Presence;
class Admission;
class PauseWatch;

class EngineCore {
 public:
  explicit EngineCore(EngineOptions options);
  ~EngineCore();

  void start();
  void stop();
  // Starts the one LISTEN session, once: at start(), or at a thin client's (never started) first
  // wait for a result, so it hears of runs ended elsewhere as soon as an engine does.
  void listen_once();
  // Lease owner name: "<instance>@<host>:<pid>".
  const std::string& owner() const { return owner_; }
  bool started() const { return started_.load(); }  // start() was called (even if it failed or stopped since)
  // Throws RegistrationError naming `what` once started: the registry is frozen at start(), as
  // the engine's threads read it from then on.
  void check_not_started(const std::string& what) const {
    if (!started()) return;
    throw RegistrationError("cannot register " + what +
                            " after Engine::start(): register every workflow, activity, trigger and queue first, "
                            "then start the engine");
  }
  EngineMetrics snapshot();
  // The runner while the engine runs (null before start() and once stop() began), for any thread:
  // a run started here is leased to this engine and replayed by it. Read it under a hold: stop()
  // waits for the holds before it takes the runner and the activity slots away.
  Runner* local_runner() const { return local_runner_.load(); }
  std::shared_lock<std::shared_mutex> hold_local_runner() { return std::shared_lock(local_starts_); }

  const EngineOptions& options() const { return options_; }
  // Written only before start() (Engine checks), read by the engine's threads after.
  Registry& registry() { return registry_; }
  pg::Store& store() { return database_.store(); }
  pg::ScheduleStore& schedule_store() { return database_.schedules(); }
  pg::RunStore& run_store() { return database_.runs(); }
  pg::QueueStore& queue_store() { return database_.queues(); }
  EngineSignals& signals() { return signals_; }
  // The paused workflow and activity types as this engine last read them (empty until start()).
  PausedTypes& paused_types() { return paused_types_; }

  // After this process cancelled a run: wakes whoever waits for results here, and cancels the
  // run's children under the cancel policy, down the tree (best effort: the orphan sweep of any
  // engine finishes what this could not).
  void run_cancelled(const std::string& run_id);

  // The queues this engine admits and runs: EngineOptions::queues and those it added.
  std::vector<std::string> served_queues() const;
  bool runs_default_queue() const;          // it serves the default queue and runs workflows
  std::vector<QueueGauges> queue_gauges();  // of the named queues it serves, read now
  // Throws UnknownQueue unless `name` is the default queue or defined in the schema (a name once
  // found is remembered: a queue is never removed).
  void check_queue_defined(const std::string& name);
  // `origin` with the queue, key and priority of a start; throws InvalidQueue or UnknownQueue.
  pg::RunOrigin placed(pg::RunOrigin origin, const StartOptions& options);

  // Engine::send: checks the input, then puts the message in the inbox of the id's latest run.
  // Returns its message id (the first message's, for a key used before).
  std::string send_message(const std::string& workflow_id, const std::string& topic, const Json& payload,
                           const SendOptions& options);

 private:
  void listen();
  // The step path's stages, each handed what it reads and writes: the dispatcher (when the engine
  // runs activities), then the replays and the runner (when it runs workflows), whose continuing in
  // place the step finisher is told of.
  void start_dispatcher();
  void start_runner();
  // Registers the activity behind WorkflowContext::send when this engine runs workflows.
  void add_builtin_activities();
  // At start(): stores the queues it adds and checks that the ones it serves are defined.
  void define_queues();
  // At start(): reads the paused types, and keeps reading them while the engine runs.
  void watch_pauses();
  // At start(), when it runs workflows: admits the queued runs of the named queues it serves.
  void start_admission();
  // Activity slots of this instance: its entry in instance_activity_concurrency, or the default.
  int activity_capacity() const;

  EngineOptions options_;
  std::string owner_;
  Registry registry_;
  pg::Database database_;
  MetricsRecorder metrics_;
  EngineSignals signals_;
  PausedTypes paused_types_;
  // Every finished activity commits through it, in groups.
  StepCommitter steps_;
  StepFinisher finisher_;  // the dispatcher hands it every outcome
  std::atomic<bool> started_{false};
  std::atomic<bool> stopping_{false};
  mutable std::mutex lifecycle_mutex_;  // guards dispatcher_ against a snapshot during stop()
  std::unique_ptr<Dispatcher> dispatcher_;
  std::unique_ptr<JournalCaches> caches_;  // when it runs workflows
  std::unique_ptr<Replayer> replayer_;
  std::unique_ptr<Runner> runner_;
  std::atomic<Runner*> local_runner_{nullptr};
  std::shared_mutex local_starts_;  // held shared by a start that uses local_runner_
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<Retention> retention_;     // when EngineOptions::retention is on
  std::unique_ptr<Sweeps> sweeps_;           // when it runs workflows
  std::unique_ptr<Presence> presence_;       // its row in the list of engines, while started
  std::unique_ptr<Admission> admission_;     // when it serves named queues and runs workflows
  std::unique_ptr<PauseWatch> pause_watch_;  // keeps paused_types_ fresh, while started
  std::mutex queues_mutex_;
  std::set<std::string> defined_queues_;  // found defined by check_queue_defined
  std::vector<std::thread> threads_;
  std::once_flag listener_once_;
  std::thread listener_;
};

}  // namespace durable::detail
