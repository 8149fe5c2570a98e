// A generation counter with a condition variable: "something changed since you last looked".
#pragma once

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
    {
      std::lock_guard lock(mutex_);
      ++generation_;
    }
    changed_.notify_all();
  }
  // Waits until the generation moves past `seen` or `timeout` passes; true if it moved.
  template <typename Rep, typename Period>
  bool wait_for(std::uint64_t seen, std::chrono::duration<Rep, Period> timeout) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return generation_ != seen; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::uint64_t generation_ = 0;
};

}  // namespace durable::detail
