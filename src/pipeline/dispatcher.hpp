// Claims activity tasks (FOR UPDATE SKIP LOCKED, never more than the pool's free slots),
// runs them on the bounded pool, enforces per-attempt timeouts, and commits each outcome
// fenced by the attempt's lease.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <random>

#include "pipeline/activity_slots.hpp"
#include "base/exceptions.hpp"
#include "pipeline/stage_parts.hpp"

namespace durable::detail {

class Runner;
struct AttemptState;

class Dispatcher {
 public:
  // `capacity` is the number of body slots. Outcomes commit through the parts' step committer
  // (or continue their workflow in place through the runner, when there is one).
  Dispatcher(StageParts parts, int capacity);
  ~Dispatcher();
  // The runner that continues a finished task's workflow in place; set before loop() starts.
  void continue_in_place_with(Runner& runner) { runner_ = &runner; }

  void loop();  // claims until the engine stops
  // Until the engine stops: fails attempts past their deadline, and tells bodies whose run no
  // longer wants them (cancelled() turns true within a second, heartbeat or not).
  void watch();
  // Graceful stop: wait up to `grace` for running activities, then hand back the rest.
  void drain(std::chrono::milliseconds grace);
  // The activity slots: a replay commit reserves some for the tasks it leases at once.
  ActivitySlots& slots() { return slots_; }
  // Fills the activity pool's gauges (busy and stuck slots).
  void add_gauges(EngineMetrics& metrics) const;

 private:
  // Settles one task on a pool thread, where `hold` is what it holds of the slots.
  void run(const pg::ClaimedTask& task, SlotHold& hold);
  int stuck_slots() const;
  void tell_unwanted();  // marks cancelled the running attempts whose tasks were dropped
  // `hold` is null off the task's pool thread (a timeout failed by the watcher).
  void settle_failure(const pg::ClaimedTask& task, const ErrorInfo& error, SlotHold* hold);
  // `transaction`: a transactional activity's, which commits the step with the body's writes.
  void finish(const pg::ClaimedTask& task, bool succeeded, const Json& result, const ErrorInfo& error, SlotHold* hold,
              bool record_attempt = true, pg::ActivityTransaction* transaction = nullptr);
  bool heartbeat(const pg::ClaimedTask& task, AttemptState& state, const Json& details);
  bool due_after_lost_lease(const pg::ClaimedTask& task, SlotHold& hold);
  void block_attempt(const pg::ClaimedTask& task);  // its input's key is unknown here (task.key_unknown)
  bool start_body(const pg::ClaimedTask& task, SlotHold& hold);
  bool run_once_per_key(const pg::ClaimedTask& task, SlotHold& hold);
  Duration jittered(const RetryPolicy& policy, Duration delay);
  // A random wait in [low, high], from the shared generator.
  Duration uniform(Duration low, Duration high);

  struct Running {
    pg::ClaimedTask task;
    std::shared_ptr<AttemptState> state;
  };

  const StageParts parts_;
  Runner* runner_ = nullptr;
  std::string names_json_;
  mutable std::mutex running_mutex_;
  // By lease token (one per attempt: a stuck attempt and its retry may both be running).
  std::map<std::int64_t, Running> running_;
  int stuck_ = 0;  // timed-out bodies that have not returned yet
  std::mt19937 random_{std::random_device{}()};
  std::mutex random_mutex_;
  ActivitySlots slots_;  // last: its threads run tasks as soon as it exists
};

}  // namespace durable::detail
