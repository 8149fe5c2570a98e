// Claims activity tasks (FOR UPDATE SKIP LOCKED, never more than the pool's free slots),
// runs them on the bounded pool, and commits each outcome fenced by the attempt's lease.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <random>

#include "dispatch/thread_pool.hpp"
#include "pg/store.hpp"

namespace durable::detail {

class EngineCore;
struct AttemptState;

class Dispatcher {
 public:
  explicit Dispatcher(EngineCore& core);
  ~Dispatcher();

  void loop();  // until the engine stops
  // Graceful stop: wait up to `grace` for running activities, then hand back the rest.
  void drain(std::chrono::milliseconds grace);

 private:
  void run(const pg::ClaimedTask& task);
  void settle(const pg::ClaimedTask& task, bool succeeded, const Json& result, const std::string& error_type,
              const std::string& error_message);

  struct Running {
    pg::ClaimedTask task;
    std::shared_ptr<AttemptState> state;
  };

  EngineCore& core_;
  std::string names_json_;
  ThreadPool pool_;
  std::mutex running_mutex_;
  std::map<std::int64_t, Running> running_;  // by task id: what a stop must hand back
  std::mt19937 jitter_{std::random_device{}()};
};

}  // namespace durable::detail
