// A generation counter with a condition variable: "something changed since you last looked".
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace durable::detail {

class WakeSignal {
 public:
  std::uint64_t generation() {
    std::lock_guard lock(mutex_);
    return generation_;
  }
  void notify() {
    bump();
    changed_.notify_all();
  }
  // Wakes a single waiter: for work one thread takes, which it passes on (notify_one again)
  // when it found some, so a single event does not send every thread to the database at once.
  void notify_one() {
    bump();
    changed_.notify_one();
  }
  // Waits until the generation moves past `seen` or `timeout` passes; true if it moved.
  template <typename Rep, typename Period>
  bool wait_for(std::uint64_t seen, std::chrono::duration<Rep, Period> timeout) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return generation_ != seen; });
  }

 private:
  void bump() {
    std::lock_guard lock(mutex_);
    ++generation_;
  }
  std::mutex mutex_;
  std::condition_variable changed_;
  std::uint64_t generation_ = 0;
};

// Runs `round` now and then every `every` until `stopping`, sleeping on `signal` in between: a
// ring there (stop() rings it) wakes the sleep only to see whether the engine is stopping.
template <typename Round>
void repeat_until_stopped(WakeSignal& signal, std::chrono::steady_clock::duration every,
                          const std::atomic<bool>& stopping, Round round) {
  while (!stopping.load()) {
    auto seen = signal.generation();
    round();
    const auto until = std::chrono::steady_clock::now() + every;
    while (!stopping.load() && std::chrono::steady_clock::now() < until) {
      signal.wait_for(seen, until - std::chrono::steady_clock::now());
      seen = signal.generation();
    }
  }
}

// Runs' ends, for result() waiters: the end of a run wakes the waiters of that run only, so that
// with many results awaited at once each end is not a read of every awaited run. An end of an
// unnamed run (a NOTIFY without a payload: an engine of an earlier version, or a cancel) wakes all.
class RunEnds {
 public:
  // The signal the end of `run_id` rings, shared by its waiters: hold it while waiting.
  std::shared_ptr<WakeSignal> of(const std::string& run_id) {
    std::lock_guard lock(mutex_);
    if (waiting_.size() >= sweep_at_) {  // forget runs nobody waits for any more
      std::erase_if(waiting_, [](const auto& entry) { return entry.second.expired(); });
      sweep_at_ = std::max<std::size_t>(64, 2 * waiting_.size());
    }
    std::weak_ptr<WakeSignal>& slot = waiting_[run_id];
    auto signal = slot.lock();
    if (!signal) {
      signal = std::make_shared<WakeSignal>();
      slot = signal;
    }
    return signal;
  }
  // How many runs it keeps a signal for (those waited for, and some not swept yet).
  std::size_t waiting() {
    std::lock_guard lock(mutex_);
    return waiting_.size();
  }
  // Run `run_id` ended ("": some run did, or runs did).
  void ended(const std::string& run_id) {
    std::vector<std::shared_ptr<WakeSignal>> wake;
    {
      std::lock_guard lock(mutex_);
      if (run_id.empty()) {
        for (auto& [id, slot] : waiting_) {
          if (auto signal = slot.lock()) wake.push_back(std::move(signal));
        }
      } else if (auto found = waiting_.find(run_id); found != waiting_.end()) {
        if (auto signal = found->second.lock()) wake.push_back(std::move(signal));
      }
    }
    for (auto& signal : wake) signal->notify();
  }

 private:
  std::mutex mutex_;
  std::unordered_map<std::string, std::weak_ptr<WakeSignal>> waiting_;
  std::size_t sweep_at_ = 64;
};

// An engine's signals. Each wakes only the loops it concerns, from a NOTIFY or a local write.
struct EngineSignals {
  WakeSignal workflow_work;  // a workflow may be runnable: wakes a runner (notify_one), which passes it on
  WakeSignal task_work;      // a task may be claimable, or a pool slot freed: wakes the dispatcher
  RunEnds ended;             // a workflow run ended: wakes its result() waiters
  WakeSignal schedule_work;  // a schedule changed or the clock moved: wakes the scheduler
  WakeSignal events;         // a run published an event: wakes get_event() waiters
  WakeSignal queue_work;     // a run was started or ended: wakes the admission of named queues
  WakeSignal paused_types;   // a type was paused or resumed somewhere: wakes the engine's re-read
  // Run `run_id` ended ("": some run did): its result() waiters, and its get_event() waiters (no
  // event comes any more).
  void run_ended(const std::string& run_id = "") {
    ended.ended(run_id);
    events.notify();
  }
};

}  // namespace durable::detail
