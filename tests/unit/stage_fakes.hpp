// In-memory stand-ins for what the step path's stages read and write (pg::TaskStore,
// pg::ReplayStore, OutcomeCommitter), so the dispatcher and the runner are tested without a
// database. They record every call; the pg tests stay the proof of behaviour against PostgreSQL.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "pg/stage_stores.hpp"
#include "pipeline/outcome_committer.hpp"

namespace durable::test {

// Hands out the tasks put in it, no more than a claim asks for, and records how each attempt was settled.
class FakeTaskStore final : public pg::TaskStore {
 public:
  void add(pg::ClaimedTask task) {
    std::lock_guard lock(mutex_);
    queued_.push_back(std::move(task));
  }
  struct Retried {
    std::int64_t task_id;
    std::string error_type;
  };
  std::vector<Retried> retried() {
    std::lock_guard lock(mutex_);
    return retried_;
  }
  std::vector<std::int64_t> released() {
    std::lock_guard lock(mutex_);
    return released_;
  }
  int largest_claim() {
    std::lock_guard lock(mutex_);
    return largest_claim_;
  }
  // Waits until `done` holds of the store's records (at most 10 s); false if it never did.
  template <typename Done>
  bool wait_until(Done done) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, std::chrono::seconds{10}, [&] { return done(*this); });
  }
  std::size_t retried_count_locked() const { return retried_.size(); }

  int claims() {  // claim statements sent, whatever they found
    std::lock_guard lock(mutex_);
    return claims_;
  }
  std::vector<pg::ClaimedTask> claim_tasks(const std::string&, const std::string&, int limit, const std::string&,
                                           Duration) override {
    std::lock_guard lock(mutex_);
    ++claims_;
    std::vector<pg::ClaimedTask> out;
    while (!queued_.empty() && static_cast<int>(out.size()) < limit) {
      out.push_back(std::move(queued_.front()));
      queued_.pop_front();
    }
    if (static_cast<int>(out.size()) > largest_claim_) largest_claim_ = static_cast<int>(out.size());
    return out;
  }
  void release_place(const pg::ClaimedTask&) override {}
  pg::QueuedClaim claim_queued_tasks(const std::string&, const std::string&, int, const std::string&,
                                     Duration) override {
    return {};  // the fakes run on the default queue only
  }
  pg::RetryOutcome retry_task(const pg::ClaimedTask& task, Duration, const std::string& error_type,
                              const std::string&) override {
    std::lock_guard lock(mutex_);
    retried_.push_back({task.task_id, error_type});
    changed_.notify_all();
    return pg::RetryOutcome::retried;
  }
  pg::HeartbeatOutcome heartbeat(const pg::ClaimedTask&, Duration, const std::string&) override {
    return pg::HeartbeatOutcome::kept;
  }
  std::vector<std::int64_t> unwanted_tasks(const std::vector<std::int64_t>&) override { return {}; }
  void release_task(const pg::ClaimedTask& task, Duration) override {
    std::lock_guard lock(mutex_);
    released_.push_back(task.task_id);
    changed_.notify_all();
  }
  int block_task(const pg::ClaimedTask&, const Json&, Duration) override { return 1; }
  bool lock_key_or_wait(const pg::ClaimedTask&) override { return true; }
  void hold_keys(const std::vector<const pg::ClaimedTask*>&, Duration) override {}
  void release_keys(const std::vector<const pg::ClaimedTask*>&) override {}
  std::optional<pg::ReusableResult> reusable_result(const pg::ClaimedTask&) override { return std::nullopt; }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<pg::ClaimedTask> queued_;
  std::vector<Retried> retried_;
  std::vector<std::int64_t> released_;
  int claims_ = 0;
  int largest_claim_ = 0;
};

// Records the outcomes the dispatcher hands on and answers each as committed.
class FakeOutcomes final : public detail::OutcomeCommitter {
 public:
  struct Seen {
    std::int64_t task_id;
    bool succeeded;
    Json result;
    std::string error_type;
  };
  detail::Committed commit(const detail::Outcome& outcome, detail::SlotHold*, pg::ActivityTransaction*) override {
    std::lock_guard lock(mutex_);
    seen_.push_back({outcome.task.task_id, outcome.succeeded, outcome.result, outcome.error.type});
    changed_.notify_all();
    pg::StepOutcome step;
    step.finish = pg::FinishOutcome::committed;
    return {std::move(step), std::nullopt};
  }
  std::vector<Seen> seen() {
    std::lock_guard lock(mutex_);
    return seen_;
  }
  bool wait_for_count(std::size_t n) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, std::chrono::seconds{10}, [&] { return seen_.size() >= n; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<Seen> seen_;
};

// A journal per run, the claims put in it, and every commit and block recorded.
class FakeReplayStore final : public pg::ReplayStore {
 public:
  std::vector<pg::JournalEvent>& journal(const std::string& run_id) { return journals_[run_id]; }
  std::vector<pg::ReplayCommit> commits;
  std::vector<Json> blocks;
  int refuse_next = 0;  // commits refused (an id taken since it was read) before one goes in

  std::vector<pg::ClaimedWorkflow> claim_workflows(const std::string&, const std::string&, int, const std::string&,
                                                   Duration) override {
    return {};
  }
  void release_workflow(const std::string&, std::int64_t) override {}
  pg::JournalRead read_journal(const std::string& run_id, int from_seq) override {
    pg::JournalRead read;
    read.run_id = run_id;
    read.name = name;
    for (const auto& e : journals_[run_id]) {
      if (e.seq >= from_seq) read.events.push_back(e);
    }
    ++reads;
    return read;
  }
  std::pair<int, std::vector<pg::InboxMessage>> read_inbox(const std::string&, const std::string&, int, int) override {
    return {0, {}};
  }
  std::map<std::string, pg::TakenId> read_child_ids(const std::set<std::string>&) override { return {}; }
  pg::ReplayOutcome commit_replay(const pg::ReplayCommit& commit) override {
    pg::ReplayOutcome out;
    if (refuse_next > 0) {
      --refuse_next;
      out.refused = true;
      return out;
    }
    commits.push_back(commit);
    auto& events = journals_[commit.run_id];
    out.base = static_cast<int>(events.size());
    for (const auto& e : commit.events) {
      events.push_back({static_cast<int>(events.size()), e.kind, e.step, e.name, e.data});
    }
    return out;
  }
  int block_run(const std::string&, std::int64_t, const Json& divergence, Duration) override {
    blocks.push_back(divergence);
    return static_cast<int>(blocks.size());
  }
  std::vector<std::string> cancel_children(const std::string&) override { return {}; }

  std::string name;  // the workflow name read_journal answers with
  int reads = 0;

 private:
  std::map<std::string, std::vector<pg::JournalEvent>> journals_;
};

}  // namespace durable::test
