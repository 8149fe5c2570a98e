#include "pipeline/first_replay.hpp"

#include <algorithm>

#include "base/log.hpp"
#include "pipeline/runner.hpp"

namespace durable::detail {

StartReplay::~StartReplay() {
  if (!journal_) return;
  const std::string run_id = journal_->run_id;
  let_go();
  caches_.forget(run_id);
}

void StartReplay::let_go() {
  if (busy_.owns_lock()) busy_.unlock();
  journal_.reset();
}

std::optional<pg::ReplayCommit> StartReplay::plan(const pg::ClaimedWorkflow& run) {
  began_ = std::chrono::steady_clock::now();
  planned_ = {};  // a retry: the slots an earlier try reserved go back first
  has_commit_ = false;
  if (!journal_) {
    journal_ = caches_.of_claim(run);
    busy_ = std::unique_lock(journal_->busy);
  }
  if (journal_->next_seq == 0 && run.start_data) {
    journal_->apply({0, journal::EventKind::workflow_started, -1, "", *run.start_data});
  }
  journal_->replayed_seq = run.replayed_seq;
  try {
    planned_ = replayer_.plan(*journal_, run.workflow_id, run.now_us, nullptr, false);
  } catch (const std::exception& e) {
    // Not decided here: a runner thread replays it (and says what went wrong, if it goes wrong again).
    logger().debug("the first replay of workflow '{}' was left to a runner: {}", run.workflow_id, e.what());
    planned_ = {};
    return std::nullopt;
  }
  // Left to a runner: what needs a claim; a replay that wrote nothing (it waits for what only a
  // claim reads); a task on a named queue, which takes its run's concurrency key from the run's
  // row (not there yet while the start inserts it).
  const auto on_named_queue = [](const pg::NewTask& task) { return task.options.queue != default_queue; };
  if (planned_.needs_claim || planned_.blocked || planned_.commit.events.empty() ||
      std::any_of(planned_.commit.tasks.begin(), planned_.commit.tasks.end(), on_named_queue)) {
    planned_ = {};
    return std::nullopt;
  }
  planned_.commit.lease_token = run.lease_token;
  has_commit_ = true;
  return planned_.commit;
}

std::string StartReplay::planned_claim_token() const { return has_commit_ ? planned_.commit.claim_token : ""; }

void StartReplay::started(Runner& runner, std::optional<pg::ClaimedWorkflow> leased,
                          std::optional<pg::ReplayOutcome> replayed) {
  if (!replayed) {
    planned_ = {};
    let_go();  // the copy holds the start: the runner's replay reads nothing
    if (leased) runner.offer(std::move(*leased));
    return;
  }
  if (replayed->base && journal_) {
    write_log_lines(planned_.log_lines);
    replayer_.committed(*journal_, planned_, *replayed->base, began_);
    let_go();
  } else if (journal_) {
    // Its answer was lost and an earlier try had committed: the copy may lack what it wrote.
    const std::string run_id = journal_->run_id;
    let_go();
    caches_.forget(run_id);
  }
  replayer_.launch(std::move(replayed->claimed), std::move(planned_.slots));
}

}  // namespace durable::detail
