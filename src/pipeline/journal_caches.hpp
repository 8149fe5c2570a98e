// This engine's copies of the journals of runs it replays, kept between replays so that a replay
// reads only the events it lacks. Shared by the runner (a claimed replay) and the step finisher
// (a finished task's workflow continued in place); whoever replays from a copy holds its `busy`.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "base/registry.hpp"
#include "pg/stage_stores.hpp"
#include "replay/journal.hpp"

namespace durable::detail {

class JournalCaches {
 public:
  JournalCaches(pg::ReplayStore& store, const Registry& registry) : store_(store), registry_(registry) {}

  // The claimed run's copy, empty when this engine has none yet.
  std::shared_ptr<JournalCache> of_claim(const pg::ClaimedWorkflow& claim);
  // The copy of a finished task's run, read from the database when this engine has none (the task
  // was claimed here, the run replayed elsewhere); null if this engine cannot replay it.
  std::shared_ptr<JournalCache> of_task(const pg::ClaimedTask& task);
  // Whether the copy (held busy) knows the task's step, after reading the events it lacks; a copy
  // that cannot be brought up to date is forgotten.
  bool knows_step(JournalCache& journal, const pg::ClaimedTask& task);
  // Drops the run's copy: the next replay reads its journal again.
  void forget(const std::string& run_id);

 private:
  // Makes room by dropping every copy (they reload from the database) when the bound is reached.
  void bound_locked();

  pg::ReplayStore& store_;
  const Registry& registry_;
  std::mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<JournalCache>> cache_;
  static constexpr std::size_t max_cached_ = 10000;
};

}  // namespace durable::detail
