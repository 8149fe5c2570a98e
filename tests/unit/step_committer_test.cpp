// Group commit without a database: steps that finish while a batch is in the database go
// together in the next one, a batch holds at most one step per workflow, and a batch whose
// statement fails fails every step in it and no other.
#include <catch2/catch.hpp>

#include <algorithm>
#include <condition_variable>
#include <future>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "pipeline/step_committer.hpp"

using namespace durable;
using namespace durable::detail;
using namespace std::chrono_literals;

namespace {

// Stands in for the step statement: records each batch's task ids and can hold batches at a gate.
struct FakeStatement {
  std::mutex mutex;
  std::condition_variable changed;
  bool open = true;
  std::size_t fail_batch = 0;  // this batch's statement fails (1 is the first)
  int in_database = 0;
  std::vector<std::vector<std::int64_t>> batches;

  std::vector<pg::StepOutcome> operator()(const std::vector<const pg::StepCommit*>& steps) {
    std::unique_lock lock(mutex);
    std::vector<std::int64_t> ids;
    for (const auto* step : steps) ids.push_back(step->task->task_id);
    batches.push_back(ids);
    ++in_database;
    changed.notify_all();
    changed.wait(lock, [&] { return open; });
    --in_database;
    if (batches.size() == fail_batch) throw std::runtime_error("connection lost");
    std::vector<pg::StepOutcome> outcomes(steps.size());
    for (auto& o : outcomes) o.finish = pg::FinishOutcome::committed;
    return outcomes;
  }
  void hold() {
    std::lock_guard lock(mutex);
    open = false;
  }
  void release() {
    std::lock_guard lock(mutex);
    open = true;
    changed.notify_all();
  }
  void wait_in_database(int n) {
    std::unique_lock lock(mutex);
    changed.wait(lock, [&] { return in_database == n; });
  }
};

pg::ClaimedTask task(std::int64_t id, const std::string& workflow) {
  pg::ClaimedTask t;
  t.task_id = id;
  t.run_id = workflow;  // at most one step per run in a batch
  t.workflow_id = workflow;
  return t;
}

// Commits `t` on a thread of its own; the future says whether it committed or what it threw.
std::future<pg::FinishOutcome> commit_async(StepCommitter& committer, const pg::ClaimedTask& t) {
  return std::async(std::launch::async, [&committer, &t] {
    pg::StepCommit step;
    step.task = &t;
    step.succeeded = true;
    return committer.commit(step).finish;
  });
}

std::vector<std::int64_t> sorted(std::vector<std::int64_t> ids) {
  std::sort(ids.begin(), ids.end());
  return ids;
}

void wait_queued(const StepCommitter& committer, std::size_t n) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (committer.queued() < n && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
  REQUIRE(committer.queued() == n);
}

}  // namespace

TEST_CASE("steps that finish while a batch is in the database commit together in the next batch",
          "[unit][group-commit]") {
  FakeStatement db;
  StepCommitter committer([&](const auto& steps) { return db(steps); });
  const auto a = task(1, "wf-a"), b = task(2, "wf-b"), c = task(3, "wf-c");
  db.hold();
  auto first = commit_async(committer, a);
  db.wait_in_database(1);
  auto second = commit_async(committer, b);
  auto third = commit_async(committer, c);
  wait_queued(committer, 2);  // one batch at a time: both wait for the first
  db.release();
  CHECK(first.get() == pg::FinishOutcome::committed);
  CHECK(second.get() == pg::FinishOutcome::committed);
  CHECK(third.get() == pg::FinishOutcome::committed);
  REQUIRE(db.batches.size() == 2);
  CHECK(db.batches[0] == std::vector<std::int64_t>{1});
  CHECK(sorted(db.batches[1]) == std::vector<std::int64_t>{2, 3});  // in either order: they queued at once
}

TEST_CASE("a batch holds at most one step per workflow", "[unit][group-commit]") {
  FakeStatement db;
  StepCommitter committer([&](const auto& steps) { return db(steps); });
  const auto a = task(1, "wf-a"), b1 = task(2, "wf-b"), b2 = task(3, "wf-b");
  db.hold();
  auto first = commit_async(committer, a);
  db.wait_in_database(1);
  auto second = commit_async(committer, b1);
  auto third = commit_async(committer, b2);
  wait_queued(committer, 2);
  db.release();
  first.get();
  second.get();
  third.get();
  REQUIRE(db.batches.size() == 3);  // the two steps of wf-b in batches of their own
  CHECK(db.batches[1].size() == 1);
  CHECK(db.batches[2].size() == 1);
}

TEST_CASE("a batch whose statement fails fails every step in it, and the next batch goes on", "[unit][group-commit]") {
  FakeStatement db;
  StepCommitter committer([&](const auto& steps) { return db(steps); });
  const auto a = task(1, "wf-a"), b = task(2, "wf-b"), c = task(3, "wf-c"), d = task(4, "wf-d");
  db.hold();
  auto first = commit_async(committer, a);
  db.wait_in_database(1);
  auto second = commit_async(committer, b);
  auto third = commit_async(committer, c);
  wait_queued(committer, 2);
  {
    std::lock_guard lock(db.mutex);
    db.fail_batch = 2;  // the batch of b and c
  }
  db.release();
  CHECK(first.get() == pg::FinishOutcome::committed);
  CHECK_THROWS_WITH(second.get(), "connection lost");
  CHECK_THROWS_WITH(third.get(), "connection lost");
  CHECK(commit_async(committer, d).get() == pg::FinishOutcome::committed);
  REQUIRE(db.batches.size() == 3);
  CHECK(sorted(db.batches[1]) == std::vector<std::int64_t>{2, 3});
}
