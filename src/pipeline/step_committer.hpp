// Group commit of finished activities: while one batch of outcomes is in the database, the ones
// that finish meanwhile queue up and go together in the next batch, in one statement and one
// WAL flush. No thread of its own: the first waiting caller commits for everyone (the leader).
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "pg/store.hpp"

namespace durable::detail {

class StepCommitter {
  using Clock = std::chrono::steady_clock;

 public:
  // Commits one batch of steps in one statement (Store::complete_steps): one outcome per step,
  // in order, or it throws (nothing of it committed, or it is in doubt).
  using CommitBatch = std::function<std::vector<pg::StepOutcome>(const std::vector<const pg::StepCommit*>&)>;
  explicit StepCommitter(CommitBatch commit_batch) : commit_batch_(std::move(commit_batch)) {}

  // Commits `step` in a batch with others; blocks until its batch has committed. Throws what the
  // batch's statement threw (nothing of it was committed, or it is in doubt: see Store).
  pg::StepOutcome commit(const pg::StepCommit& step);
  // Steps waiting for a batch (not those in the database): for tests.
  std::size_t queued() const;

 private:
  struct Waiting {
    const pg::StepCommit* step;
    std::optional<pg::StepOutcome> outcome;
    std::exception_ptr error;
  };
  // The oldest waiting steps, at most one per workflow and none of a workflow in a batch in the
  // database: a statement updates a workflow row once, and two batches of this engine never wait
  // for each other's row locks.
  std::vector<Waiting*> take_batch();
  std::vector<pg::StepOutcome> run_batch(const std::vector<Waiting*>& batch);

  static constexpr std::size_t max_batch_ = 64;
  CommitBatch commit_batch_;
  mutable std::mutex mutex_;
  std::condition_variable committed_;
  std::deque<Waiting*> waiting_;
  std::set<std::string> committing_;        // runs of the steps in the batches in the database
  int in_flight_ = 0;                       // batches in the database
  static constexpr int max_in_flight_ = 1;  // like PostgreSQL's own group commit: one flush at a time
  // Steps of the last batch that went on in place with a task leased at once: their next
  // outcomes come back soon when the activities are short. Each caller that arrives counts one down.
  int coming_ = 0;
  Clock::time_point coming_since_{};  // when that batch committed
  Clock::duration come_back_{};       // how long they take to come back, averaged over batches
  Clock::duration last_batch_{};      // how long the last batch took in the database
  bool gathering_ = false;            // a leader waits for them before taking its batch
  void came_back(Clock::duration took);
};

}  // namespace durable::detail
