#include "pipeline/journal_caches.hpp"

#include "base/log.hpp"

namespace durable::detail {

void JournalCaches::bound_locked() {
  if (cache_.size() >= max_cached_) cache_.clear();  // crude bound: evicted journals reload from the database
}

std::shared_ptr<JournalCache> JournalCaches::of_claim(const pg::ClaimedWorkflow& claim) {
  std::lock_guard lock(mutex_);
  auto it = cache_.find(claim.run_id);
  if (it != cache_.end()) return it->second;
  bound_locked();
  auto fresh = std::make_shared<JournalCache>();
  fresh->run_id = claim.run_id;
  fresh->name = claim.name;
  cache_[claim.run_id] = fresh;
  return fresh;
}

void JournalCaches::forget(const std::string& run_id) {
  std::lock_guard lock(mutex_);
  cache_.erase(run_id);
}

std::shared_ptr<JournalCache> JournalCaches::of_task(const pg::ClaimedTask& task) {
  {
    std::lock_guard lock(mutex_);
    auto it = cache_.find(task.run_id);
    if (it != cache_.end()) return it->second;
  }
  if (registry_.workflows.empty()) return nullptr;  // an activity-only engine replays nothing
  try {
    pg::JournalRead read = store_.read_journal(task.run_id, 0);
    if (read.run_id.empty() || !registry_.workflows.count(read.name)) return nullptr;
    auto fresh = std::make_shared<JournalCache>();
    fresh->run_id = std::move(read.run_id);
    fresh->name = std::move(read.name);
    fresh->replayed_seq = read.replayed_seq;
    fresh->apply(read.events);
    std::lock_guard lock(mutex_);
    bound_locked();
    return cache_.try_emplace(task.run_id, std::move(fresh)).first->second;  // or whoever was first
  } catch (const std::exception& e) {
    logger().debug("journal of workflow '{}' not loaded: {}", task.workflow_id, e.what());
    return nullptr;
  }
}

bool JournalCaches::knows_step(JournalCache& journal, const pg::ClaimedTask& task) {
  if (task.step < 0) return false;
  if (task.step < static_cast<int>(journal.steps.size())) return true;
  // The step was scheduled after the journal was cached (by another engine): read the new events.
  try {
    pg::JournalRead read = store_.read_journal(task.run_id, journal.next_seq);
    if (read.run_id.empty()) {  // the run was deleted: this copy is of no use
      forget(task.run_id);
      return false;
    }
    journal.replayed_seq = read.replayed_seq;  // another engine's replays may have read further
    journal.apply(read.events);
  } catch (const std::exception& e) {
    logger().debug("journal of workflow '{}' not brought up to date: {}", task.workflow_id, e.what());
    forget(task.run_id);
    return false;
  }
  return task.step < static_cast<int>(journal.steps.size());
}

}  // namespace durable::detail
