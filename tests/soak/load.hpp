// The soak's load: runs of the test workflows (tests/support/test_workflows.hpp) started at a
// fixed rate, in turn: a chain of five activities, a durable timer of a second, a wait for a
// message the load sends two seconds after the start, and two child workflows. Each run's result
// is read and checked against what it must be.
#pragma once

#include <durable/durable.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace durable::soak {

class Load {
 public:
  struct Counts {
    std::int64_t started = 0;
    std::int64_t completed = 0;  // with the right result
    std::int64_t failed = 0;
    std::int64_t latency_ms = 0;  // summed over the completed ones
  };

  // Starts ten seconds' runs at once, then `rate` runs a second, through `client` (an engine that
  // need not be started), with ids "<prefix><kind>-<n>", until stop_starting().
  Load(Engine& client, double rate, std::string prefix);
  ~Load();
  Load(const Load&) = delete;
  Load& operator=(const Load&) = delete;

  void stop_starting();
  // Waits until every run started has been read back, or `limit` passes; returns whether it was.
  bool drain(std::chrono::seconds limit);
  Counts counts() const;
  std::vector<std::string> failures() const;  // the first few

 private:
  struct Pending {
    UntypedWorkflowHandle run;
    int kind;
    std::int64_t n;
    std::chrono::steady_clock::time_point started;
  };
  struct Send {
    std::chrono::steady_clock::time_point due;
    std::string workflow_id;
    std::string text;
  };

  void start_loop();
  void start_one(std::int64_t n);
  void send_due(std::chrono::steady_clock::time_point now);
  void read_loop(int kind);
  void read_one(const Pending& p);
  void fail(const std::string& what);

  Engine& client_;
  const std::chrono::nanoseconds period_;
  const std::string prefix_;
  const std::int64_t burst_;  // runs started at once at the beginning
  std::atomic<bool> starting_{true};
  std::atomic<bool> reading_{true};
  std::atomic<std::int64_t> started_{0}, completed_{0}, failed_{0}, latency_ms_{0};
  std::deque<Send> sends_;  // the start loop's own
  mutable std::mutex mutex_;
  std::condition_variable pending_cv_;
  // A queue per kind, each read in start order by a thread of its own: the runs of one kind take
  // about as long each, so one read waits little for those before it, and a latency is the run's.
  std::vector<std::deque<Pending>> pending_;
  std::vector<std::string> failures_;
  std::vector<std::thread> threads_;
};

}  // namespace durable::soak
