// Claims activity tasks (FOR UPDATE SKIP LOCKED, never more than the pool's free slots),
// runs them on the bounded pool, enforces per-attempt timeouts, and commits each outcome
// fenced by the attempt's lease.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <random>

#include "dispatch/thread_pool.hpp"
#include "durable/engine.hpp"
#include "exceptions.hpp"
#include "pg/store.hpp"

namespace durable::detail {

class EngineCore;
struct AttemptState;

// How many steps in a row of one workflow may pass a slot on to the next (see ClaimedTask::handovers).
constexpr int max_slot_handovers = 32;

class Dispatcher {
 public:
  explicit Dispatcher(EngineCore& core);
  ~Dispatcher();

  void loop();   // claims until the engine stops
  void watch();  // fails attempts past their deadline, until the engine stops
  // Graceful stop: wait up to `grace` for running activities, then hand back the rest.
  void drain(std::chrono::milliseconds grace);
  // Takes up to `wanted` free slots for tasks about to be leased to this engine (claimed, or
  // leased at once by a replay commit), so two claimers never take the same slot.
  int reserve(int wanted);
  // Runs tasks leased to this engine on the slots reserved for them, and frees the rest.
  void launch(std::vector<pg::ClaimedTask> tasks, int reserved, bool at_once = true);
  // Fills the activity pool's gauges (busy and stuck slots).
  void add_gauges(EngineMetrics& metrics) const;

 private:
  void run(const pg::ClaimedTask& task);
  int stuck_slots() const;
  bool has_free_slot();
  void settle_success(const pg::ClaimedTask& task, const Json& result);
  void settle_failure(const pg::ClaimedTask& task, const ErrorInfo& error);
  void finish(const pg::ClaimedTask& task, bool succeeded, const Json& result, const ErrorInfo& error,
              bool record_attempt = true);
  bool heartbeat(const pg::ClaimedTask& task, AttemptState& state, const Json& details);
  bool due_after_lost_lease(const pg::ClaimedTask& task);
  bool run_once_per_key(const pg::ClaimedTask& task);
  Duration jittered(const RetryPolicy& policy, Duration delay);
  // A random wait in [low, high], from the shared generator.
  Duration uniform(Duration low, Duration high);

  struct Running {
    pg::ClaimedTask task;
    std::shared_ptr<AttemptState> state;
  };

  EngineCore& core_;
  std::string names_json_;
  ThreadPool pool_;
  mutable std::mutex running_mutex_;
  // By lease token (one per attempt: a stuck attempt and its retry may both be running).
  std::map<std::int64_t, Running> running_;
  int stuck_ = 0;  // timed-out bodies that have not returned yet
  std::mutex slots_mutex_;
  int reserved_ = 0;  // slots promised to tasks not yet submitted
  std::mt19937 random_{std::random_device{}()};
  std::mutex random_mutex_;
};

}  // namespace durable::detail
