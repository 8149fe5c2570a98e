#include "pipeline/step_committer.hpp"

namespace durable::detail {

pg::StepOutcome StepCommitter::commit(const pg::StepCommit& step) {
  Waiting me{&step, std::nullopt, nullptr};
  std::unique_lock lock(mutex_);
  waiting_.push_back(&me);
  if (coming_ > 0 && --coming_ == 0) {
    came_back(Clock::now() - coming_since_);
    committed_.notify_all();  // a gathering leader has them all
  }
  while (!me.outcome && !me.error) {
    if (in_flight_ == max_in_flight_ || gathering_) {
      committed_.wait(lock);
      continue;
    }
    if (coming_ > 0 && come_back_ < last_batch_) {
      // Wait for the steps the last batch continued, when they usually come back sooner than a
      // batch takes: one batch of all of them costs about what half of them did (a statement's
      // cost is mostly per statement). Without this, short steps settle into two half-size
      // batches that take turns. Steps that take longer (long activities) are not waited for.
      gathering_ = true;
      committed_.wait_for(lock, std::min<Clock::duration>(2 * come_back_, last_batch_), [&] { return coming_ == 0; });
      gathering_ = false;
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
    const auto started = Clock::now();
    try {
      outcomes = run_batch(batch);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();  // the waiting threads read their results under the lock
    const auto now = Clock::now();
    last_batch_ = now - started;
    if (coming_ > 0) came_back(now - coming_since_);  // not all back within a batch: at least this long
    coming_ = 0;
    for (const auto& outcome : outcomes) coming_ += outcome.claimed.empty() ? 0 : 1;
    coming_since_ = now;
    for (std::size_t i = 0; i < batch.size(); ++i) {
      committing_.erase(batch[i]->step->task->run_id);
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

std::size_t StepCommitter::queued() const {
  std::lock_guard lock(mutex_);
  return waiting_.size();
}

void StepCommitter::came_back(Clock::duration took) { come_back_ = (3 * come_back_ + took) / 4; }

std::vector<StepCommitter::Waiting*> StepCommitter::take_batch() {
  std::vector<Waiting*> batch;
  for (auto it = waiting_.begin(); it != waiting_.end() && batch.size() < max_batch_;) {
    if (committing_.insert((*it)->step->task->run_id).second) {
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
  return commit_batch_(steps);
}

}  // namespace durable::detail
