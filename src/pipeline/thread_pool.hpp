// A fixed pool of threads for activity bodies; the dispatcher claims only its free slots.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace durable::detail {

class ThreadPool {
 public:
  // `on_slot_freed` runs after each job, so a saturated dispatcher wakes to claim again.
  ThreadPool(int size, std::function<void()> on_slot_freed);
  ~ThreadPool();  // shutdown()
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return size_; }
  int busy() const;  // queued + running
  int free_slots() const { return size_ - busy(); }
  void submit(std::function<void()> job);
  bool wait_idle(std::chrono::milliseconds timeout);  // true when nothing is queued or running
  void shutdown();                                    // runs what is queued, then joins every thread

 private:
  void work();
  int size_;
  std::function<void()> on_slot_freed_;
  mutable std::mutex mutex_;
  std::condition_variable queued_, idle_;
  std::deque<std::function<void()>> jobs_;
  int running_ = 0;
  bool closing_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace durable::detail
