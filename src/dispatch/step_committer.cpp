#include "dispatch/step_committer.hpp"

#include "engine_core.hpp"

namespace durable::detail {

pg::StepOutcome StepCommitter::commit(const pg::StepCommit& step) {
  Waiting me{&step, std::nullopt, nullptr};
  std::unique_lock lock(mutex_);
  waiting_.push_back(&me);
  while (!me.outcome && !me.error) {
    if (in_flight_ == max_in_flight_) {
      committed_.wait(lock);
      continue;
    }
    const std::vector<Waiting*> batch = take_batch();
    if (batch.empty()) {  // ours is in a batch in the database, or waits for one that is
      committed_.wait(lock);
      continue;
    }
    ++in_flight_;
    lock.unlock();
    std::vector<pg::StepOutcome> outcomes;
    std::exception_ptr error;
    try {
      outcomes = run_batch(batch);
      ++core_.metrics.outcome_commits;
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();  // the waiting threads read their results under the lock
    for (std::size_t i = 0; i < batch.size(); ++i) {
      committing_.erase(batch[i]->step->task->workflow_id);
      if (error) {
        batch[i]->error = error;
      } else {
        batch[i]->outcome = std::move(outcomes[i]);
      }
    }
    --in_flight_;
    committed_.notify_all();
  }
  if (me.error) std::rethrow_exception(me.error);
  return std::move(*me.outcome);
}

std::vector<StepCommitter::Waiting*> StepCommitter::take_batch() {
  std::vector<Waiting*> batch;
  for (auto it = waiting_.begin(); it != waiting_.end() && batch.size() < max_batch_;) {
    if (committing_.insert((*it)->step->task->workflow_id).second) {
      batch.push_back(*it);
      it = waiting_.erase(it);
    } else {
      ++it;  // another step of its workflow is being committed: this one waits for the next batch
    }
  }
  return batch;
}

std::vector<pg::StepOutcome> StepCommitter::run_batch(const std::vector<Waiting*>& batch) {
  std::vector<const pg::StepCommit*> steps;
  steps.reserve(batch.size());
  for (const Waiting* w : batch) steps.push_back(w->step);
  return core_.store.complete_steps(steps, core_.owner(), core_.options.lease_margin);
}

}  // namespace durable::detail
