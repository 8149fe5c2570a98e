// Claims activity tasks (FOR UPDATE SKIP LOCKED, never more than the pool's free slots),
// runs them on the bounded pool, enforces per-attempt timeouts, and commits each outcome
// fenced by the attempt's lease.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/exceptions.hpp"
#include "base/paused_types.hpp"
#include "base/registry.hpp"
#include "base/wake_signal.hpp"
#include "pg/stage_stores.hpp"
#include "pipeline/activity_slots.hpp"
#include "pipeline/outcome_committer.hpp"
#include "pipeline/recorder.hpp"

namespace durable::pg {
class Store;
class TransactionConnections;
}  // namespace durable::pg

namespace durable::detail {

struct AttemptState;

// What the dispatcher needs of the engine's options.
struct DispatcherSettings {
  std::string owner;     // takes the task leases
  std::string instance;  // named in its logs
  Duration poll_interval{};
  Duration lease_margin{};  // an attempt's lease is its timeout plus this
  bool idempotency_input_mismatch_fails = false;
  // The queues served: the default queue's tasks are claimed only when it is listed, a named
  // queue's within its limits (pg::TaskStore::claim_queued_tasks).
  std::vector<std::string> queues{};
  // This engine's bound on the attempts of a named queue running in it (EngineOptions::queue_activity_concurrency).
  std::map<std::string, int> queue_limits{};
};

// Where transactional activities open the transactions their bodies run in.
struct TransactionSource {
  pg::TransactionConnections& connections;
  pg::Store& store;
};

class Dispatcher {
 public:
  // `capacity` is the number of body slots. Tasks are claimed from and settled in `store`;
  // outcomes are handed to `outcomes`. `transactions`: null on an engine (or a test) that runs no
  // transactional activity.
  // `paused`: the activity types paused, whose tasks it does not claim.
  Dispatcher(DispatcherSettings settings, int capacity, const Registry& registry, const PausedTypes& paused,
             pg::TaskStore& store, OutcomeCommitter& outcomes, MetricsRecorder& metrics, EngineSignals& signals,
             const std::atomic<bool>& stopping, const TransactionSource* transactions = nullptr);
  ~Dispatcher();

  void loop();  // claims until the engine stops
  // Starts the watcher thread, which until drain() has ended: fails attempts past their
  // deadline, tells bodies whose run no longer wants them (cancelled() turns true within a
  // second, heartbeat or not), and keeps holding the idempotency keys of bodies that run on after
  // their tasks let go of them (timed out, dropped, handed back).
  void start_watching();
  // Shutdown began: every running body's cancelled() turns true now, and so does a body's that
  // starts from now on.
  void tell_stopping();
  // Graceful stop: wait up to `grace` for running activities, then hand back the rest, wait for
  // every body to return, and stop the watcher.
  void drain(std::chrono::milliseconds grace);
  // The activity slots: a replay commit reserves some for the tasks it leases at once.
  ActivitySlots& slots() { return slots_; }
  // Fills the activity pool's gauges (busy and stuck slots).
  void add_gauges(EngineMetrics& metrics) const;

 private:
  // Settles one task on a pool thread, where `hold` is what it holds of the slots.
  void run(const pg::ClaimedTask& task, SlotHold& hold);
  int stuck_slots() const;
  // Claims up to `free` tasks: the default queue's and those whose lease ran out, and the named
  // queues' in turn (first on every other call, so neither kind starves the other). `retry_in`:
  // when a named queue's full rate window frees a place.
  std::vector<pg::ClaimedTask> claim(int free, std::optional<Duration>& retry_in);
  void claim_named(std::vector<pg::ClaimedTask>& tasks, const std::string& names_json, int free,
                   std::optional<Duration>& retry_in);
  // A task this dispatcher made pending again (a retry, a wait after a lost lease) is claimable in
  // `delay`: no NOTIFY says so, so the claim loop wakes for it itself.
  void claimable_in(Duration delay);
  // How long the idle claim loop may sleep: `wait`, or less when a task made pending here comes due.
  Duration until_due(Duration wait);
  // Hands back, uncounted, the claimed attempts of an activity paused since the claim read the names.
  void give_back_paused(std::vector<pg::ClaimedTask>& tasks);
  void watch();
  void stop_watching();
  void tell_unwanted();  // marks cancelled the running attempts whose tasks were dropped
  void renew_held_keys();
  void release_key(const pg::ClaimedTask& task);          // the body returned: let go of its key, wake waiters
  void release_place(const pg::ClaimedTask& task);        // a cancelled task's body returned: free its place
  bool gave_up_at_shutdown(const pg::ClaimedTask& task);  // hands it back; false if that failed
  void horizon_cut(const pg::ClaimedTask& task);          // a retry the horizon forbids: warns
  // `hold` is null off the task's pool thread (a timeout failed by the watcher). True when the
  // failure committed (retried, or the task failed): its commit let go of the task's key.
  bool settle_failure(const pg::ClaimedTask& task, const ErrorInfo& error, SlotHold* hold);
  // `transaction`: a transactional activity's, which commits the step with the body's writes.
  // True when the outcome committed (not fenced off).
  bool finish(const pg::ClaimedTask& task, bool succeeded, const Json& result, const ErrorInfo& error, SlotHold* hold,
              bool record_attempt = true, pg::ActivityTransaction* transaction = nullptr);
  bool heartbeat(const pg::ClaimedTask& task, AttemptState& state, const Json& details);
  bool due_after_lost_lease(const pg::ClaimedTask& task, SlotHold& hold);
  void block_attempt(const pg::ClaimedTask& task);  // its input's key is unknown here (task.key_unknown)
  bool start_body(const pg::ClaimedTask& task, SlotHold& hold);
  bool open_transaction(const ActivityDefinition& def, const pg::ClaimedTask& task,
                        std::optional<pg::ActivityTransaction>& transaction);
  // Hands back a task whose attempt came to nothing through no fault of its own; returns false (not settled).
  bool hand_back(const pg::ClaimedTask& task);
  Json body_result(const ActivityDefinition& def, const pg::ClaimedTask& task, const AttemptState& state,
                   ActivityContext& ctx, pg::ActivityTransaction* transaction);
  // The running attempt's state (its heartbeat and deadline), entered in running_; `task` must
  // outlive the attempt (its heartbeat refers to it).
  std::shared_ptr<AttemptState> start_attempt(const pg::ClaimedTask& task);
  bool run_once_per_key(const pg::ClaimedTask& task, SlotHold& hold);
  Duration jittered(const RetryPolicy& policy, Duration delay);
  // A random wait in [low, high], from the shared generator.
  Duration uniform(Duration low, Duration high);

  struct Running {
    pg::ClaimedTask task;
    std::shared_ptr<AttemptState> state;
    bool handed_back = false;  // at shutdown: its outcome is discarded
    // Its body runs on after its task let go of the key: the watcher holds the key until it returns.
    bool key_held = false;
  };
  void hold_key(Running& r);  // under running_mutex_: from now on its key is held for its body
  void hold_keys(const std::vector<Running>& attempts);  // those whose keys are held: for lease_margin more

  const DispatcherSettings settings_;
  const Registry& registry_;
  pg::TaskStore& store_;
  OutcomeCommitter& outcomes_;
  MetricsRecorder& metrics_;
  EngineSignals& signals_;
  const std::atomic<bool>& stopping_;
  const std::optional<TransactionSource> transactions_;
  const PausedTypes& paused_;
  std::string queues_json_;                // the queues served
  std::vector<std::string> named_queues_;  // those of them with limits: claimed under their locks
  std::size_t next_named_ = 0;             // the named queue to claim from first, in turn
  bool named_first_ = false;
  // This engine's places on the queues it bounds (settings_.queue_limits): an attempt takes one as
  // it is claimed and gives it back when run() returns (its outcome committed or discarded).
  int free_places(const std::string& queue, int wanted);
  void take_places(const std::string& queue, int count);
  struct QueuePlace {
    QueuePlace(Dispatcher& dispatcher, const pg::ClaimedTask& task);
    ~QueuePlace();
    QueuePlace(const QueuePlace&) = delete;
    QueuePlace& operator=(const QueuePlace&) = delete;
    Dispatcher& dispatcher;
    const std::string* queue;  // null: on a queue this engine does not bound
  };
  std::mutex places_mutex_;
  std::map<std::string, int, std::less<>> places_taken_;
  mutable std::mutex running_mutex_;
  // By lease token (one per attempt: a stuck attempt and its retry may both be running).
  std::map<std::int64_t, Running> running_;
  int stuck_ = 0;  // timed-out bodies that have not returned yet
  std::atomic<bool> watching_{false};
  // The last claim took fewer tasks than it had slots for: none were left. A freed slot then
  // wakes no claim; a NOTIFY of new tasks, a task made pending here, or the poll interval does.
  std::atomic<bool> drained_{false};
  std::mutex due_mutex_;
  std::optional<std::chrono::steady_clock::time_point> due_;  // the earliest task made pending here, still ahead
  std::thread watcher_;
  std::mt19937 random_{std::random_device{}()};
  std::mutex random_mutex_;
  ActivitySlots slots_;  // last: its threads run tasks as soon as it exists
};

}  // namespace durable::detail
