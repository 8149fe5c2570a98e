#include "pipeline/thread_pool.hpp"

namespace durable::detail {

ThreadPool::ThreadPool(int size, std::function<void()> on_slot_freed)
    : size_(size), on_slot_freed_(std::move(on_slot_freed)) {
  threads_.reserve(static_cast<std::size_t>(size));
  for (int i = 0; i < size; ++i) threads_.emplace_back([this] { work(); });
}

ThreadPool::~ThreadPool() { shutdown(); }

int ThreadPool::busy() const {
  std::lock_guard lock(mutex_);
  return static_cast<int>(jobs_.size()) + running_;
}

void ThreadPool::submit(std::function<void()> job) {
  {
    std::lock_guard lock(mutex_);
    jobs_.push_back(std::move(job));
  }
  queued_.notify_one();
}

bool ThreadPool::wait_idle(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  return idle_.wait_for(lock, timeout, [&] { return jobs_.empty() && running_ == 0; });
}

void ThreadPool::shutdown() {
  {
    std::lock_guard lock(mutex_);
    if (closing_ && threads_.empty()) return;
    closing_ = true;
  }
  queued_.notify_all();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

void ThreadPool::work() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock lock(mutex_);
      queued_.wait(lock, [&] { return closing_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // closing and drained
      job = std::move(jobs_.front());
      jobs_.pop_front();
      ++running_;
    }
    job();  // jobs catch their own exceptions
    {
      std::lock_guard lock(mutex_);
      --running_;
      if (jobs_.empty() && running_ == 0) idle_.notify_all();
    }
    if (on_slot_freed_) on_slot_freed_();
  }
}

}  // namespace durable::detail
