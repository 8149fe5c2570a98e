#include "pipeline/step_finisher.hpp"

#include "base/log.hpp"
#include "pg/activity_transaction.hpp"

namespace durable::detail {

pg::StepOutcome StepFinisher::commit_step(const pg::StepCommit& step, pg::ActivityTransaction* transaction) {
  if (!transaction) return steps_.commit(step);
  ++metrics_.outcome_commits;
  return transaction->commit(step, owner_, lease_margin_);
}

Committed StepFinisher::commit(const Outcome& outcome, SlotHold* hold, pg::ActivityTransaction* transaction) {
  if (replayer_) {
    if (auto continued = continue_in_place(outcome, hold, transaction)) return std::move(*continued);
  }
  const pg::StepCommit plain{&outcome.task,
                             outcome.succeeded,
                             outcome.result,
                             outcome.error.type,
                             outcome.error.message,
                             outcome.record_attempt,
                             nullptr,
                             -1,
                             {}};
  return {commit_step(plain, transaction), std::nullopt};
}

std::optional<Committed> StepFinisher::continue_in_place(const Outcome& outcome, SlotHold* hold,
                                                         pg::ActivityTransaction* transaction) {
  const pg::ClaimedTask& task = outcome.task;
  std::shared_ptr<JournalCache> journal = caches_->of_task(task);
  if (!journal || paused_->workflow_paused(journal->name)) return std::nullopt;
  std::unique_lock busy(journal->busy, std::try_to_lock);
  if (!busy.owns_lock() || !caches_->knows_step(*journal, task)) return std::nullopt;

  // The outcome's event as the statement journals it, applied to the copy for the replay and
  // undone unless the replay commits with it.
  const int expected_seq = journal->next_seq;
  const StepRecord before = journal->steps[static_cast<std::size_t>(task.step)];
  auto undo = [&] {
    journal->next_seq = expected_seq;
    journal->steps[static_cast<std::size_t>(task.step)] = before;
  };
  const int attempts = outcome.record_attempt ? task.attempt : task.attempt - 1;  // as complete_steps journals it
  const Json data =
      outcome.succeeded
          ? Json{{"result", outcome.result}, {"attempts", attempts}}
          : Json{{"error_type", outcome.error.type}, {"error_message", outcome.error.message}, {"attempts", attempts}};
  // The replay's clock: the database's at the claim, moved on by our own clock since (never ahead of the database's).
  const std::int64_t now_us =
      task.claimed_at_us +
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - task.received).count();

  const auto started = std::chrono::steady_clock::now();
  Replayer::Planned planned;
  try {
    journal->apply({expected_seq,
                    outcome.succeeded ? journal::EventKind::activity_completed : journal::EventKind::activity_failed,
                    task.step, task.name, data});
    // Not reading the inbox here: a replay that receives commits through a claim, whose
    // statement checks that no message came since the inbox was read (and so does one that publishes).
    planned = replayer_->plan(*journal, task.workflow_id, now_us, hold, false);
  } catch (const std::exception& e) {
    undo();
    logger().debug("workflow '{}' cannot continue in place: {}", task.workflow_id, e.what());
    return std::nullopt;
  }
  if (planned.needs_claim) {
    undo();
    return std::nullopt;
  }
  pg::StepOutcome step;
  try {
    step = commit_step({&task, outcome.succeeded, outcome.result, outcome.error.type, outcome.error.message,
                        outcome.record_attempt, &planned.commit, expected_seq, journal->run_id},
                       transaction);
  } catch (...) {
    undo();
    throw;  // the slots it reserved are freed with `planned`
  }
  if (step.continued) {
    write_log_lines(planned.log_lines);
    replayer_->committed(*journal, planned, *step.base + 1, started);
  } else if (step.finish == pg::FinishOutcome::committed_earlier) {
    caches_->forget(task.run_id);  // whether the replay went in with it is not known: reload next time
  } else {
    undo();
  }
  busy.unlock();  // before its tasks run: their completions continue in place with this journal
  for (auto& next : step.claimed) next.handovers = task.handovers + 1;
  return Committed{std::move(step), std::move(planned.slots)};
}

}  // namespace durable::detail
