// Claims runnable workflows (FOR UPDATE SKIP LOCKED), replays their code against the
// journal and commits the new events, tasks and status in one fenced statement.
#pragma once

#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "pg/store.hpp"
#include "replay/journal.hpp"

namespace durable::detail {

class EngineCore;

class Runner {
 public:
  explicit Runner(EngineCore& core);
  void loop();  // one per runner thread, until the engine stops

 private:
  void process(const pg::ClaimedWorkflow& claim);
  std::shared_ptr<JournalCache> cached(const pg::ClaimedWorkflow& claim);
  void forget(const std::string& workflow_id);

  EngineCore& core_;
  std::string names_json_;
  std::mutex cache_mutex_;
  std::unordered_map<std::string, std::shared_ptr<JournalCache>> cache_;
  static constexpr std::size_t max_cached_ = 10000;
};

}  // namespace durable::detail
