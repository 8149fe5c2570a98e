// A generation counter with a condition variable: "something changed since you last looked".
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

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

// An engine's signals. Each wakes only the loops it concerns, from a NOTIFY or a local write.
struct EngineSignals {
  WakeSignal workflow_work;  // a workflow may be runnable: wakes a runner (notify_one), which passes it on
  WakeSignal task_work;      // a task may be claimable, or a pool slot freed: wakes the dispatcher
  WakeSignal ended;          // a workflow run ended: wakes result() waiters
  WakeSignal schedule_work;  // a schedule changed or the clock moved: wakes the scheduler
  WakeSignal events;         // a run published an event: wakes get_event() waiters
  WakeSignal queue_work;     // a run was started or ended: wakes the admission of named queues
  WakeSignal paused_types;   // a type was paused or resumed somewhere: wakes the engine's re-read
  // A run ended: its result() waiters, and its get_event() waiters (no event comes any more).
  void run_ended() {
    ended.notify();
    events.notify();
  }
};

}  // namespace durable::detail
